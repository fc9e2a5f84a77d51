// The Arithmetic operator (max, min, sum, mean, prelu, mod, fmod, pow of broadcast operands):
// its kernels' values and derivatives by hand, its shape inference and its ONNX import, PyTorch's
// nn.PReLU, torch.maximum, torch.minimum and torch.pow as exported
// (tests/data/onnx/arithmetic.onnx, from make_small_models.py).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "parallel_shape_literal.h"
#include "unity/core/errors.h"
#include "unity/core/onnx/onnx_import.h"
#include "unity/core/ops/arithmetic.h"
#include "unity/core/pcg/graph.h"
#include "unity/core/shapes/shape_inference.h"

using namespace unity;
namespace ar = arithmetic;
namespace fs = std::filesystem;

namespace {

ar::Arithmetic of(const std::string& function, std::optional<double> scalar = std::nullopt) {
  Attributes a{{"function", function}};
  if (scalar) a.set("scalar", *scalar);
  return ar::arithmetic_of(Operator{OpType::Arithmetic, a, "op"});
}

// The forward pass of operands of sizes `sizes`, broadcast to `out`.
std::vector<double> run(const ar::Arithmetic& a, const std::vector<std::vector<double>>& in,
                        const std::vector<std::vector<std::int64_t>>& sizes,
                        const std::vector<std::int64_t>& out, bool integer = false) {
  std::vector<const double*> ptrs;
  for (const auto& v : in) ptrs.push_back(v.data());
  std::int64_t n = 1;
  for (auto s : out) n *= s;
  std::vector<double> y(static_cast<std::size_t>(n));
  ar::forward(a, ptrs, sizes, out, integer, y.data());
  return y;
}

// Every input's gradient for dy = `dy`.
std::vector<std::vector<double>> grads(const ar::Arithmetic& a,
                                       const std::vector<std::vector<double>>& in,
                                       const std::vector<std::vector<std::int64_t>>& sizes,
                                       const std::vector<std::int64_t>& out,
                                       const std::vector<double>& dy) {
  std::vector<const double*> ptrs;
  for (const auto& v : in) ptrs.push_back(v.data());
  std::vector<std::vector<double>> g;
  for (const auto& v : in) g.emplace_back(v.size(), 0.0);
  std::vector<double*> gp;
  for (auto& v : g) gp.push_back(v.data());
  ar::backward(a, ptrs, sizes, out, dy.data(), gp);
  return g;
}

using test_shapes::S;

Operator Op(const std::string& function) {
  return Operator{OpType::Arithmetic, {{"function", function}}, "op"};
}

}  // namespace

TEST(ArithmeticOperator, ValuesByHand) {
  // ONNX's Max/Min/Sum/Mean examples: [3, 2, 1], [1, 4, 4], [2, 5, 3].
  const std::vector<std::vector<double>> in = {{3, 2, 1}, {1, 4, 4}, {2, 5, 3}};
  const std::vector<std::vector<std::int64_t>> s3 = {{3}, {3}, {3}};
  EXPECT_EQ(run(of("max"), in, s3, {3}), (std::vector<double>{3, 5, 4}));
  EXPECT_EQ(run(of("min"), in, s3, {3}), (std::vector<double>{1, 2, 1}));
  EXPECT_EQ(run(of("sum"), in, s3, {3}), (std::vector<double>{6, 11, 8}));
  EXPECT_EQ(run(of("mean"), in, s3, {3}), (std::vector<double>{2, 11.0 / 3, 8.0 / 3}));
  // One operand: itself.
  EXPECT_EQ(run(of("max"), {{3, 2}}, {{2}}, {2}), (std::vector<double>{3, 2}));
  // max(x, 0) with the scalar attribute, broadcast [2, 2] against [2] (rows).
  EXPECT_EQ(run(of("max", 0.0), {{-1, 2}}, {{2}}, {2}), (std::vector<double>{0, 2}));
  EXPECT_EQ(run(of("sum"), {{1, 2, 3, 4}, {10, 20}}, {{2, 2}, {2}}, {2, 2}),
            (std::vector<double>{11, 22, 13, 24}));
  // PRelu: x where x > 0, else slope x; a slope per row [2, 1] against x [2, 2].
  EXPECT_EQ(run(of("prelu"), {{-2, 3, -4, 5}, {0.5, 0.25}}, {{2, 2}, {2, 1}}, {2, 2}),
            (std::vector<double>{-1, 3, -1, 5}));
  // Mod: the divisor's sign (Python's %); fmod: the dividend's (C's).
  const std::vector<std::vector<double>> ab = {{-4, 7, 5, -3}, {3, -3, -2, 2}};
  EXPECT_EQ(run(of("mod"), ab, {{4}, {4}}, {4}), (std::vector<double>{2, -2, -1, 1}));
  EXPECT_EQ(run(of("fmod"), ab, {{4}, {4}}, {4}), (std::vector<double>{-1, 1, 1, -1}));
  EXPECT_EQ(run(of("mod", 2.0), {{5, -5}}, {{2}}, {2}), (std::vector<double>{1, 1}));
  // Integer division by 0 gives 0 (numpy's), not a crash.
  EXPECT_EQ(run(of("mod"), {{5}, {0}}, {{1}, {1}}, {1}, true), (std::vector<double>{0}));
  // Pow with a tensor exponent; an integer output truncates.
  EXPECT_EQ(run(of("pow"), {{2, 9, 4}, {3, 0.5, -1}}, {{3}, {3}}, {3}),
            (std::vector<double>{8, 3, 0.25}));
  EXPECT_EQ(run(of("pow"), {{2, 3}, {0.5, 2}}, {{2}, {2}}, {2}, true), (std::vector<double>{1, 9}));
}

TEST(ArithmeticOperator, DerivativesByHand) {
  // Max: dy to the largest; ties share it (torch.maximum's even split).
  auto g = grads(of("max"), {{3, 2, 1}, {1, 4, 4}, {2, 5, 4}}, {{3}, {3}, {3}}, {3}, {1, 1, 6});
  EXPECT_EQ(g[0], (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(g[1], (std::vector<double>{0, 0, 3}));
  EXPECT_EQ(g[2], (std::vector<double>{0, 1, 3}));
  g = grads(of("min"), {{3, 2}, {1, 2}}, {{2}, {2}}, {2}, {2, 2});
  EXPECT_EQ(g[0], (std::vector<double>{0, 1}));
  EXPECT_EQ(g[1], (std::vector<double>{2, 1}));
  // Sum and mean: dy (over n) to each, summed over a broadcast operand's dims.
  g = grads(of("sum"), {{1, 2, 3, 4}, {0, 0}}, {{2, 2}, {2}}, {2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(g[0], (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(g[1], (std::vector<double>{4, 6}));
  g = grads(of("mean"), {{1, 2}, {3, 4}}, {{2}, {2}}, {2}, {2, 4});
  EXPECT_EQ(g[0], (std::vector<double>{1, 2}));
  // PRelu: dx = dy (x > 0) or slope dy; dslope = x dy where x <= 0, summed over its broadcast.
  g = grads(of("prelu"), {{-2, 3, -4, 5}, {0.5, 0.25}}, {{2, 2}, {2, 1}}, {2, 2}, {1, 1, 1, 2});
  EXPECT_EQ(g[0], (std::vector<double>{0.5, 1, 0.25, 2}));
  EXPECT_EQ(g[1], (std::vector<double>{-2, -4}));
  // Mod: da = dy, db = -floor(a / b) dy; fmod -trunc(a / b) dy. -7 / 2 = -3.5.
  g = grads(of("mod"), {{-7, 7}, {2, 2}}, {{2}, {2}}, {2}, {1, 1});
  EXPECT_EQ(g[0], (std::vector<double>{1, 1}));
  EXPECT_EQ(g[1], (std::vector<double>{4, -3}));
  g = grads(of("fmod"), {{-7, 7}, {2, 2}}, {{2}, {2}}, {2}, {1, 1});
  EXPECT_EQ(g[1], (std::vector<double>{3, -3}));
  // Pow: dbase = e b^(e-1), dexp = b^e ln b; at base 0 with e >= 0 no exponent gradient.
  g = grads(of("pow"), {{2, 0}, {3, 2}}, {{2}, {2}}, {2}, {1, 1});
  EXPECT_EQ(g[0], (std::vector<double>{12, 0}));
  EXPECT_DOUBLE_EQ(g[1][0], 8 * std::log(2.0));
  EXPECT_EQ(g[1][1], 0);
}

TEST(ArithmeticOperator, ShapeInferenceBroadcastsAndChecks) {
  // Dims of one size keep their degree; a broadcast operand has degree 1 there and a copy per
  // partition (replica 2).
  EXPECT_EQ(infer_output_shapes(Op("max"), {S({{8, 2}, {4, 1}}), S({{8, 2}, {4, 1}})})[0],
            S({{8, 2}, {4, 1}}));
  EXPECT_EQ(
      infer_output_shapes(Op("prelu"), {S({{8, 2}, {4, 1}, {3, 1}}), S({{4, 1}, {1, 1}}, 2)})[0],
      S({{8, 2}, {4, 1}, {3, 1}}));
  EXPECT_EQ(infer_output_shapes(Op("sum"), {S({{8, 1}}), S({{8, 1}}), S({{8, 1}}), S({{8, 1}})})[0],
            S({{8, 1}}));
  // Integers stay integers; Pow's exponent may be of another type.
  EXPECT_EQ(infer_output_shapes(
                Op("min"), {S({{3, 1}}, 1, DataType::Int64), S({{3, 1}}, 1, DataType::Int64)})[0]
                .dtype,
            DataType::Int64);
  EXPECT_EQ(infer_output_shapes(Op("pow"), {S({{3, 1}}), S({{3, 1}}, 1, DataType::Int64)})[0].dtype,
            DataType::Float32);
  auto rejected = [](const Operator& op, std::vector<ParallelTensorShape> in, const char* what) {
    try {
      infer_output_shapes(op, in);
      ADD_FAILURE() << "accepted " << op.attrs.get_string("function");
    } catch (const ShapeError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  rejected(Op("median"), {S({{3, 1}})}, "attribute 'function' must be one of");
  rejected(Op("mod"), {S({{3, 1}})}, "takes two operands");
  rejected(Op("prelu"), {S({{3, 1}}), S({{2, 1}, {3, 1}})}, "must broadcast to x");
  rejected(Op("max"), {S({{3, 1}}), S({{3, 1}}, 1, DataType::Int64)}, "differ in type");
  rejected(Op("mean"), {S({{3, 1}}, 1, DataType::Int64)}, "floating-point");
  rejected(Op("max"), {S({{8, 2}}), S({{8, 4}})}, "degree");
}

TEST(ArithmeticOperator, TorchExportImportsAsArithmeticNodes) {
  const Graph g =
      import_onnx(fs::path(UNITY_SOURCE_DIR) / "tests" / "data" / "onnx" / "arithmetic.onnx");
  std::map<std::string, int> functions;
  for (const auto& [id, n] : g.nodes()) {
    if (n.op.type != OpType::Arithmetic) continue;
    ++functions[n.op.attrs.get_string("function")];
    if (n.op.attrs.get_string("function") == "prelu") {
      // nn.PReLU's slope is a trained Weight of [C, 1, 1], broadcast to x [N, C, H, W].
      const Node& slope = g.node(n.inputs[1].node);
      EXPECT_EQ(slope.op.type, OpType::Weight);
      EXPECT_EQ(g.shape(n.inputs[1]).sizes(), (std::vector<std::int64_t>{4, 1, 1}));
    }
  }
  EXPECT_EQ(functions,
            (std::map<std::string, int>{{"max", 1}, {"min", 1}, {"pow", 1}, {"prelu", 1}}));
}
