// A loss for an inference export: which one, on which outputs, with which new inputs.
#include <gtest/gtest.h>

#include "unity/core/errors.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/pcg/training_loss.h"
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

}  // namespace
}  // namespace unity
