// The Det operator (core/src/ops/det.cpp, executor/src/ops/det_ops.cpp): determinants of known
// matrices, the gradient (the cofactors) against central differences, on invertible and singular
// matrices alike, its shape inference, and the executor's backward through a graph.
#include <gtest/gtest.h>

#include <random>

#include "executor_test_support.h"
#include "gradient_check.h"
#include "unity/core/errors.h"
#include "unity/core/ops/determinant.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/shapes/shape_inference.h"

using namespace unity;

namespace {

ParallelTensorShape matrices(std::vector<std::int64_t> sizes, int split_dim = -1, int degree = 1) {
  ParallelTensorShape s = ParallelTensorShape::serial(sizes, DataType::Float32);
  if (split_dim >= 0) s.dims[static_cast<std::size_t>(split_dim)].degree = degree;
  return s;
}

}  // namespace

TEST(DetOperator, DeterminantsOfKnownMatrices) {
  const std::vector<double> a = {2, 1, 1, 3};
  EXPECT_DOUBLE_EQ(determinant::det(a.data(), 2), 5);
  const std::vector<double> swap = {0, 1, 1, 0};  // a row swap: the pivot's sign
  EXPECT_DOUBLE_EQ(determinant::det(swap.data(), 2), -1);
  const std::vector<double> b = {1, 2, 3, 0, 1, 4, 5, 6, 0};
  EXPECT_NEAR(determinant::det(b.data(), 3), 1, 1e-12);
  const std::vector<double> singular = {1, 2, 2, 4};
  EXPECT_DOUBLE_EQ(determinant::det(singular.data(), 2), 0);
  const std::vector<double> one = {-7};
  EXPECT_DOUBLE_EQ(determinant::det(one.data(), 1), -7);
}

TEST(DetOperator, CofactorsAreTheDerivativeEvenOfSingularMatrices) {
  // [[1, 2], [2, 4]] has rank 1: det = 0, but its adjugate [[4, -2], [-2, 1]] is not.
  const std::vector<double> singular = {1, 2, 2, 4};
  EXPECT_EQ(determinant::cofactors(singular.data(), 2), (std::vector<double>{4, -2, -2, 1}));
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  for (std::int64_t m : {1, 2, 3, 5}) {
    std::vector<double> a(static_cast<std::size_t>(m * m));
    for (double& v : a) v = u(rng);
    // A singular one too: the last row the sum of the others (rank m - 1).
    std::vector<double> s = a;
    for (std::int64_t c = 0; c < m && m > 1; ++c) {
      s[static_cast<std::size_t>((m - 1) * m + c)] = 0;
      for (std::int64_t r = 0; r + 1 < m; ++r)
        s[static_cast<std::size_t>((m - 1) * m + c)] += s[static_cast<std::size_t>(r * m + c)];
    }
    for (const auto& x : {a, s}) {
      const std::vector<double> c = determinant::cofactors(x.data(), m);
      for (std::size_t e = 0; e < x.size(); ++e) {
        std::vector<double> up = x, down = x;
        up[e] += 1e-6;
        down[e] -= 1e-6;
        const double numeric =
            (determinant::det(up.data(), m) - determinant::det(down.data(), m)) / 2e-6;
        EXPECT_NEAR(c[e], numeric, 1e-6) << "m = " << m << ", element " << e;
      }
    }
  }
}

TEST(DetOperator, ShapeInferenceKeepsTheLeadingDimsAndReadsEachMatrixWhole) {
  const Operator det{OpType::Det, {}, "det"};
  const auto out = infer_output_shapes(det, {matrices({4, 5, 3, 3}, 0, 2)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].sizes(), (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(out[0].dims[0].degree, 2);
  EXPECT_EQ(infer_output_shapes(det, {matrices({3, 3})})[0].rank(), 0);
  auto message = [&](const ParallelTensorShape& x) {
    try {
      infer_output_shapes(det, {x});
    } catch (const ShapeError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message(matrices({2, 3, 4})).find("square"), std::string::npos);
  EXPECT_NE(message(matrices({2, 4, 4}, 1, 2)).find("read whole"), std::string::npos);
  EXPECT_NE(message(matrices({4})).find("rank"), std::string::npos);
  EXPECT_NE(message(ParallelTensorShape::serial({2, 2}, DataType::Int64)).find("floating"),
            std::string::npos);
}

TEST(DetOperator, TheExecutorComputesEachMatrixsDeterminant) {
  Graph g;
  const auto x = g.add_input("x", {2, 2, 2});
  const auto y = g.add(Operator{OpType::Det, {}, "det"}, {x});
  executor::HostTensor t;
  t.shape = {2, 2, 2};
  t.values = {2, 1, 1, 3, 0, 1, 1, 0};
  const auto out = executor::testing::evaluate_on_one_device(g, {{x.node, t}}).at({y, 0});
  EXPECT_EQ(out.shape, (std::vector<std::int64_t>{2}));
  EXPECT_EQ(out.values, (std::vector<float>{5, -1}));
}

TEST(DetOperator, BackwardMatchesCentralDifferences) {
  unity::testing::check_gradients([](GraphBuilder& b) {
    return b.op(OpType::Det, {}, {b.weight("x", {4, 3, 3})}, "det");
  });
}

TEST(DetOperator, ItsDefinitionSaysHowItSplits) {
  const SliceLayout* layout = slice_layout(OpType::Det);
  ASSERT_NE(layout, nullptr);
  EXPECT_EQ(layout->whole_dims, 2);
  EXPECT_EQ(layout->output_dims, 0);
  const auto& d = operator_definition(OpType::Det);
  EXPECT_EQ(d.onnx_types, (std::vector<std::string_view>{"Det"}));
  ASSERT_NE(d.example_inputs, nullptr);
  const auto shapes = d.example_inputs({2, 4, 3});
  EXPECT_EQ(shapes.at(0).sizes(), (std::vector<std::int64_t>{2, 4, 4}));
}
