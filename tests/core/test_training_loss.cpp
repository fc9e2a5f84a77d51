// A loss for an inference export: which one, on which outputs, with which new inputs.
#include <gtest/gtest.h>

#include "unity/core/errors.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/pcg/training_loss.h"
#include "unity/core/strategies/data_parallel.h"
#include "unity/core/zoo/model_zoo.h"

namespace unity {
namespace {

// x [8, 16] -> Linear -> [8, 10] (and, with `rank3`, reshaped to [8, 2, 5]).
Graph inference_model(bool rank3 = false) {
  Graph g;
  g.name = "export";
  g.batch_size = 8;
  GraphBuilder b(g);
  TensorRef y = b.linear(b.input("x", {8, 16}), 10, "fc");
  if (rank3) y = b.reshape(y, {8, 2, 5}, "shape");
  return g;
}

TEST(TrainingLoss, TwoDimensionalOutputsGetCrossEntropyByDefault) {
  Graph g = inference_model();
  ASSERT_FALSE(has_loss(g));
  const auto a = attach_loss(g, std::nullopt);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->kind, LossKind::CrossEntropy);
  EXPECT_TRUE(a->chosen);
  EXPECT_TRUE(has_loss(g));
  // The labels: an int64 Input of the output's shape without its classes.
  bool labels = false;
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == OpType::Input && n.op.name == "fc.labels") {
      labels = true;
      EXPECT_EQ(n.outputs.at(0).sizes(), (std::vector<std::int64_t>{8}));
      EXPECT_EQ(n.outputs.at(0).dtype, DataType::Int64);
    }
  EXPECT_TRUE(labels);
  EXPECT_NE(describe(*a, "export.onnx").find("choose with --loss"), std::string::npos);
}

TEST(TrainingLoss, OtherOutputsGetMeanSquaredErrorByDefault) {
  Graph g = inference_model(true);
  const auto a = attach_loss(g, std::nullopt);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->kind, LossKind::Mse);
  EXPECT_EQ(g.count(OpType::MSELoss), 1);
}

TEST(TrainingLoss, AskedForLossesAndTheirLimits) {
  Graph g = inference_model(true);
  const auto a = attach_loss(g, LossKind::CrossEntropy);  // over the last dim: labels [8, 2]
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(a->chosen);
  EXPECT_EQ(g.count(OpType::SoftmaxCrossEntropy), 1);
  // A model with a loss stays as it is, and asking for another is an error.
  Graph zoo_model = zoo::build("mnist-mlp", 8);
  const auto before = zoo_model.size();
  EXPECT_FALSE(attach_loss(zoo_model, std::nullopt).has_value());
  EXPECT_EQ(zoo_model.size(), before);
  EXPECT_THROW(attach_loss(zoo_model, LossKind::Mse), InputError);
  EXPECT_THROW(loss_kind_from_string("hinge"), InputError);
}

// x [8, 16] -> Linear -> [8, 4]; the loss sum((y - 1)^2) / sum(w) of a weighted mean written out
// (a 0-d value, as torch exports a loss with its reduction).
Graph own_loss_model() {
  Graph g;
  g.name = "own-loss";
  g.batch_size = 8;
  GraphBuilder b(g);
  const TensorRef y = b.linear(b.input("x", {8, 16}), 4, "fc");
  const TensorRef err = b.op(OpType::ScalarAdd, {{"scalar", -1.0}}, {y}, "err");
  const TensorRef total = b.reduce_sum(b.mul(err, err, "square"), {0, 1}, false, "total");
  const TensorRef weight = b.reduce_sum(b.input("w", {8}), {0}, false, "weight");
  b.binary(OpType::Div, total, weight, "loss");
  return g;
}

TEST(TrainingLoss, AZeroDimensionalOutputIsTheModelsOwnLoss) {
  Graph g = own_loss_model();
  ASSERT_TRUE(has_loss(g));
  for (const TensorRef sink : g.sinks()) EXPECT_TRUE(is_objective(g, sink));
  const auto before = g.size();
  const auto own = attach_loss(g, std::nullopt);
  ASSERT_TRUE(own.has_value());
  EXPECT_TRUE(own->own);
  EXPECT_EQ(own->outputs, (std::vector<std::string>{"'loss'"}));
  EXPECT_EQ(describe(*own, "own.onnx"),
            "'own.onnx' ends in its own loss: output 'loss' (0-d) trained as it is");
  EXPECT_EQ(g.size(), before);  // nothing attached
  EXPECT_THROW(attach_loss(g, LossKind::Mse), InputError);
  // A [8, 10] output is not a loss: it gets one.
  Graph export_model = inference_model();
  EXPECT_FALSE(is_objective(export_model, export_model.sinks().front()));
}

TEST(TrainingLoss, DataParallelSumsPartialLossesBeforeTheyAreDivided) {
  // Over 4 devices each ReduceSum over the batch leaves 4 partial sums; the Div may read neither
  // as it is, so each gets an AllReduce of degree 4 and the Div reads copies.
  const Graph dp = make_data_parallel(own_loss_model(), 4);
  EXPECT_EQ(dp.count(OpType::AllReduce), 2);
  for (const auto& [id, n] : dp.nodes()) {
    if (n.op.type == OpType::AllReduce) {
      EXPECT_EQ(n.op.attrs.get_int("degree"), 4);
      EXPECT_EQ(dp.node(n.inputs.at(0).node).op.type, OpType::ReduceSum);
    }
    if (n.op.name == "loss") {
      for (const auto& in : n.inputs) EXPECT_EQ(dp.node(in.node).op.type, OpType::AllReduce);
    }
  }
  // A loss operator sums its partial losses itself: mnist-mlp's data-parallel layout has none.
  EXPECT_EQ(make_data_parallel(zoo::build("mnist-mlp", 8), 4).count(OpType::AllReduce), 0);
}

}  // namespace
}  // namespace unity
