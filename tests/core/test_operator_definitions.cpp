// The operator registry (op_list.h, unity/core/ops/operator_definition.h): every listed operator
// has its definition, and every point-wise operator's function, derivative, shape, work and import
// follow from it. A point-wise operator added to the list is checked here without a new test.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "unity/core/cost/cost_model.h"
#include "unity/core/errors.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/shapes/shape_inference.h"

using namespace unity;

namespace {

// A required parameter gets 1.7, as the executor's gradient checks give scalars.
std::vector<double> test_parameters(const PointwiseFunction& f) {
  std::vector<double> p;
  for (const auto& param : f.parameters) p.push_back(param.default_value.value_or(1.7));
  return p;
}

double value(OpType t, double x) {
  const PointwiseFunction& f = *pointwise_function(t);
  return f.value(x, test_parameters(f).data());
}

}  // namespace

TEST(OperatorRegistry, EveryListedOperatorHasItsOwnDefinition) {
  const auto defs = operator_definitions();
  ASSERT_EQ(defs.size(), all_op_infos().size());
  for (std::size_t i = 0; i < defs.size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(defs[i]->info.type), i);
    EXPECT_EQ(op_type_from_string(defs[i]->info.name), defs[i]->info.type);
    EXPECT_EQ(&operator_definition(defs[i]->info.type), defs[i]);
  }
  EXPECT_EQ(to_string(OpType::LeakyRelu), "LeakyRelu");
  EXPECT_TRUE(is_elementwise_unary(OpType::HardSwish));
  EXPECT_TRUE(is_elementwise_unary(OpType::Dropout));
  EXPECT_FALSE(is_elementwise_unary(OpType::Softmax));
  // Each ONNX type is imported by one operator.
  std::map<std::string_view, std::string_view> importer;
  for (const auto* d : defs)
    for (std::string_view t : d->onnx_types)
      EXPECT_TRUE(importer.emplace(t, d->info.name).second) << t << " imported twice";
}

TEST(PointwiseOperators, ValuesAsOnnxDefinesThem) {
  EXPECT_DOUBLE_EQ(value(OpType::LeakyRelu, -2.0), -0.02);
  EXPECT_DOUBLE_EQ(value(OpType::LeakyRelu, 3.0), 3.0);
  EXPECT_NEAR(value(OpType::Elu, -1.0), std::exp(-1.0) - 1.0, 1e-15);
  // ONNX's defaults are the float32 nearest SELU's constants.
  const double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
  EXPECT_NEAR(value(OpType::Selu, 1.0), gamma, 1e-15);
  EXPECT_NEAR(value(OpType::Selu, -1.0), gamma * alpha * (std::exp(-1.0) - 1), 1e-15);
  EXPECT_NEAR(value(OpType::Softplus, 0.0), std::numbers::ln2, 1e-15);
  EXPECT_NEAR(value(OpType::Softplus, 800.0), 800.0, 1e-9);  // no overflow
  EXPECT_NEAR(value(OpType::Mish, 1.0), std::tanh(std::log1p(std::exp(1.0))), 1e-15);
  EXPECT_DOUBLE_EQ(value(OpType::HardSigmoid, 1.0), 0.7);
  EXPECT_DOUBLE_EQ(value(OpType::HardSigmoid, 10.0), 1.0);
  EXPECT_DOUBLE_EQ(value(OpType::HardSwish, -4.0), 0.0);
  EXPECT_NEAR(value(OpType::HardSwish, 1.0), 1.0 * (1.0 / 6.0 + 0.5), 1e-15);
  EXPECT_DOUBLE_EQ(value(OpType::HardSwish, 4.0), 4.0);
  EXPECT_DOUBLE_EQ(value(OpType::Softsign, -3.0), -0.75);
}

// Every point-wise operator's derivative against central differences of its function, away from
// the kinks (0 and +-3 for the hinges, 2.5 for HardSigmoid's defaults).
TEST(PointwiseOperators, DerivativesMatchFiniteDifferences) {
  int checked = 0;
  for (const OperatorDefinition* d : operator_definitions()) {
    if (!d->pointwise) continue;
    const PointwiseFunction& f = *d->pointwise;
    const std::vector<double> p = test_parameters(f);
    for (double x : {-4.1, -2.9, -1.3, -0.4, 0.35, 1.2, 2.7, 5.3}) {
      const double y = f.value(x, p.data());
      if (!std::isfinite(y)) continue;  // outside the domain (Sqrt, Pow below 0)
      const double h = 1e-6;
      const double numeric = (f.value(x + h, p.data()) - f.value(x - h, p.data())) / (2 * h);
      EXPECT_NEAR(f.derivative(x, y, p.data()), numeric, 1e-6 * std::max(1.0, std::abs(numeric)))
          << d->info.name << " at " << x;
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(PointwiseOperators, LinearOnesAreLinear) {
  for (const OperatorDefinition* d : operator_definitions()) {
    if (!d->pointwise || !d->pointwise->linear) continue;
    const PointwiseFunction& f = *d->pointwise;
    const std::vector<double> p = test_parameters(f);
    EXPECT_NEAR(f.value(0.3 + 1.9, p.data()), f.value(0.3, p.data()) + f.value(1.9, p.data()),
                1e-12)
        << d->info.name;
  }
  EXPECT_TRUE(pointwise_function(OpType::ScalarMul)->linear);
  EXPECT_FALSE(pointwise_function(OpType::ScalarAdd)->linear);
  EXPECT_FALSE(pointwise_function(OpType::LeakyRelu)->linear);
}

TEST(PointwiseOperators, ParametersComeFromAttributesOrDefaults) {
  Operator op{OpType::Selu, {}, "selu"};
  EXPECT_EQ(operator_parameters(op),
            (std::vector<double>{1.67326319217681884765625, 1.05070102214813232421875}));
  op.attrs.set("gamma", 2.0);
  EXPECT_EQ(operator_parameters(op)[1], 2.0);
  // A required parameter left out is named.
  Operator scalar{OpType::ScalarMul, {}, "s"};
  try {
    operator_parameters(scalar);
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("scalar"), std::string::npos) << e.what();
  }
}

TEST(PointwiseOperators, ShapeAndWorkFollowTheDefinition) {
  Graph g;
  GraphBuilder b(g);
  const TensorRef x = b.input("x", {8, 16});
  const TensorRef leaky = b.op(OpType::LeakyRelu, {{"alpha", 0.2}}, {x}, "leaky");
  const TensorRef elu = b.op(OpType::Elu, {}, {leaky}, "elu");
  EXPECT_EQ(g.shape(elu).sizes(), (std::vector<std::int64_t>{8, 16}));
  // A hinge is one flop an element, no transcendental; Elu evaluates an exp per element.
  const TaskWork lw = task_work(g, leaky.node);
  const TaskWork ew = task_work(g, elu.node);
  EXPECT_EQ(lw.flops, 128);
  EXPECT_EQ(lw.transcendentals, 0);
  EXPECT_EQ(ew.transcendentals, 128);
  EXPECT_EQ(ew.bytes, 2 * 128 * 4);
  // A parameter that is not a number is refused by shape inference.
  Operator bad{OpType::LeakyRelu, {{"alpha", std::string("big")}}, "bad"};
  EXPECT_THROW(infer_output_shapes(bad, {g.shape(x)}), ShapeError);
}

// Every operator along an axis: its backward is the transpose of its Jacobian (central
// differences of the forward, column by column) times a vector.
TEST(AxisOperators, BackwardIsTheJacobianTransposeTimesTheGradient) {
  int checked = 0;
  for (const OperatorDefinition* d : operator_definitions()) {
    if (!d->along_axis) continue;
    const AxisFunction& f = *d->along_axis;
    // The parameters at their defaults, then each set to 1 alone and all together (CumSum's
    // exclusive and reverse are flags).
    std::vector<std::vector<double>> settings;
    std::vector<double> defaults;
    for (const auto& p : f.parameters) defaults.push_back(p.default_value.value_or(1.0));
    settings.push_back(defaults);
    for (std::size_t k = 0; k < defaults.size(); ++k) {
      settings.push_back(defaults);
      settings.back()[k] = 1.0;
    }
    if (defaults.size() > 1) settings.push_back(std::vector<double>(defaults.size(), 1.0));
    for (const auto& params : settings) {
      const std::vector<double> x = {0.3, -1.2, 2.5, 0.0, 1.1};
      const std::vector<double> dy = {0.7, -0.4, 1.3, 0.2, -0.9};
      const auto n = static_cast<std::int64_t>(x.size());
      std::vector<double> y(x.size()), dx(x.size());
      f.forward(x.data(), y.data(), n, params.data());
      f.backward(x.data(), y.data(), dy.data(), dx.data(), n, params.data());
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double h = 1e-6;
        std::vector<double> xp = x, xm = x, yp(x.size()), ym(x.size());
        xp[i] += h;
        xm[i] -= h;
        f.forward(xp.data(), yp.data(), n, params.data());
        f.forward(xm.data(), ym.data(), n, params.data());
        double numeric = 0;
        for (std::size_t j = 0; j < x.size(); ++j) numeric += dy[j] * (yp[j] - ym[j]) / (2 * h);
        EXPECT_NEAR(dx[i], numeric, 1e-6)
            << d->info.name << " input " << i << " parameters " << ::testing::PrintToString(params);
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

// CumSum's four forms on [1, 2, 3, 4], as torch.cumsum and ONNX's CumSum give them.
TEST(AxisOperators, CumSumInclusiveExclusiveForwardReverse) {
  const AxisFunction& f = *axis_function(OpType::CumSum);
  const std::vector<double> x = {1, 2, 3, 4};
  auto run = [&](double exclusive, double reverse) {
    std::vector<double> y(4);
    const double params[] = {exclusive, reverse};
    f.forward(x.data(), y.data(), 4, params);
    return y;
  };
  EXPECT_EQ(run(0, 0), (std::vector<double>{1, 3, 6, 10}));
  EXPECT_EQ(run(1, 0), (std::vector<double>{0, 1, 3, 6}));
  EXPECT_EQ(run(0, 1), (std::vector<double>{10, 9, 7, 4}));
  EXPECT_EQ(run(1, 1), (std::vector<double>{9, 7, 4, 0}));
}

TEST(AxisOperators, LogSoftmaxOfLargeLogitsStaysFinite) {
  const AxisFunction& f = *axis_function(OpType::LogSoftmax);
  const std::vector<double> x = {1000.0, 1001.0, 1002.0};
  std::vector<double> y(3);
  f.forward(x.data(), y.data(), 3, nullptr);
  const double lse = 1002.0 + std::log(std::exp(-2.0) + std::exp(-1.0) + 1.0);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(y[i], x[i] - lse, 1e-12);
  // Its shape keeps the axis whole, and the work is Softmax's.
  Graph g;
  GraphBuilder b(g);
  const TensorRef logits = b.input("logits", {4, 10});
  const TensorRef ls = b.op(OpType::LogSoftmax, {{"axis", std::int64_t{1}}}, {logits}, "ls");
  EXPECT_EQ(task_work(g, ls.node).flops, 8.0 * 40);
  EXPECT_EQ(task_work(g, ls.node).transcendentals, 40.0);
  ParallelTensorShape split = g.shape(logits);
  split.dims[1].degree = 2;
  EXPECT_THROW(infer_output_shapes(g.node(ls.node).op, {split}), ShapeError);
  split.dims[1].degree = 1;
  split.dims[0].degree = 2;
  EXPECT_EQ(infer_output_shapes(g.node(ls.node).op, {split})[0], split);
}

// LRN by hand: channels [1, 2, 3], size 2 (a window of c and c + 1), alpha 1, beta 1, bias 1:
// y_c = x_c / (1 + 0.5 x the sum of squares in the window).
TEST(AxisOperators, LrnNormalisesByTheWindowAboveEachChannel) {
  const AxisFunction& f = *axis_function(OpType::LRN);
  const std::vector<double> x = {1, 2, 3};
  std::vector<double> y(3);
  const double params[] = {2, 1, 1, 1};  // size, alpha, beta, bias
  f.forward(x.data(), y.data(), 3, params);
  EXPECT_NEAR(y[0], 1 / (1 + 0.5 * (1 + 4)), 1e-12);
  EXPECT_NEAR(y[1], 2 / (1 + 0.5 * (4 + 9)), 1e-12);
  EXPECT_NEAR(y[2], 3 / (1 + 0.5 * 9), 1e-12);
  // Size 3 centres the window: channel 1 reads all three.
  const double centred[] = {3, 1, 1, 1};
  f.forward(x.data(), y.data(), 3, centred);
  EXPECT_NEAR(y[0], 1 / (1 + (1 + 4) / 3.0), 1e-12);
  EXPECT_NEAR(y[1], 2 / (1 + (1 + 4 + 9) / 3.0), 1e-12);
  // The channels are read whole; N and H split.
  Graph g;
  GraphBuilder b(g);
  const TensorRef in = b.input("x", {2, 4, 6, 6});
  const TensorRef lrn = b.op(OpType::LRN, {{"axis", std::int64_t{1}}, {"size", 3.0}}, {in}, "lrn");
  ParallelTensorShape split = g.shape(in);
  split.dims[1].degree = 2;
  EXPECT_THROW(infer_output_shapes(g.node(lrn.node).op, {split}), ShapeError);
  split.dims[1].degree = 1;
  split.dims[0].degree = 2;
  split.dims[2].degree = 3;
  EXPECT_EQ(infer_output_shapes(g.node(lrn.node).op, {split})[0], split);
  // Without its size it is refused.
  Operator no_size{OpType::LRN, {{"axis", std::int64_t{1}}}, "no_size"};
  EXPECT_THROW(infer_output_shapes(no_size, {g.shape(in)}), ShapeError);
}

// Trilu on the 2 x 3 matrix [[1, 2, 3], [4, 5, 6]] flattened: the triangles torch.triu/tril give.
TEST(AxisOperators, TriluKeepsATriangleOfTheFlattenedMatrix) {
  const AxisFunction& f = *axis_function(OpType::Trilu);
  const std::vector<double> x = {1, 2, 3, 4, 5, 6};
  auto run = [&](double upper, double k) {
    std::vector<double> y(6);
    const double params[] = {2, upper, k};  // rows, upper, k
    f.forward(x.data(), y.data(), 6, params);
    return y;
  };
  EXPECT_EQ(run(1, 0), (std::vector<double>{1, 2, 3, 0, 5, 6}));
  EXPECT_EQ(run(0, 0), (std::vector<double>{1, 0, 0, 4, 5, 0}));
  EXPECT_EQ(run(1, 1), (std::vector<double>{0, 2, 3, 0, 0, 6}));
  EXPECT_EQ(run(0, -1), (std::vector<double>{0, 0, 0, 4, 0, 0}));
  EXPECT_EQ(run(1, -5), x);
}

TEST(AxisOperators, HardmaxIsTheOneHotOfTheFirstMaximum) {
  const AxisFunction& f = *axis_function(OpType::Hardmax);
  const std::vector<double> x = {1, 3, 3, 2};
  std::vector<double> y(4), dx(4, 5.0);
  f.forward(x.data(), y.data(), 4, nullptr);
  EXPECT_EQ(y, (std::vector<double>{0, 1, 0, 0}));
  f.backward(x.data(), y.data(), x.data(), dx.data(), 4, nullptr);
  EXPECT_EQ(dx, (std::vector<double>(4, 0.0)));
}
