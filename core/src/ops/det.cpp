// Det: the determinant of each square matrix in the last two dims of x, [..., m, m] -> [...]
// (ONNX's Det; torch.det and torch.linalg.det export it: a normalizing flow's log-determinant, a
// volume, a signed area). Each matrix is its own slice (SliceLayout{2, 0}): every leading dim
// splits, the matrix dims are read whole. The arithmetic is unity/core/ops/determinant.h, which
// the executor's kernel (executor/src/ops/det_ops.cpp) runs too. Backward: dx = dy adj(x)^T.
#include "shapes/shape_rules.h"
#include "unity/core/cost/cost_model.h"
#include "unity/core/ops/determinant.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/pcg/graph.h"

namespace unity {
namespace {

using namespace shape_rules;

std::vector<ParallelTensorShape> infer(const Operator&,
                                       const std::vector<ParallelTensorShape>& in) {
  const ParallelTensorShape& x = in.at(0);
  expect_floating(x, "x");
  expect_min_rank(x, 2, "x");
  const int r = x.rank();
  if (x.dims[r - 1].size != x.dims[r - 2].size)
    fail("x's last two dims must be square matrices, got {}", x.to_string());
  expect_degree(x, r - 2, 1, "x", "each matrix is read whole");
  expect_degree(x, r - 1, 1, "x", "each matrix is read whole");
  ParallelTensorShape out = x;
  out.dims.resize(static_cast<std::size_t>(r - 2));
  return {out};
}

// LU with partial pivoting: 2/3 m^3 FLOPs a matrix. The backward factors it again and solves for
// the m columns of the inverse (2 m^2 each): 8/3 m^3, four times the forward.
void work(const Graph& g, const Node& n, bool, TaskWork& w) {
  const double m = static_cast<double>(g.shape(n.inputs.at(0)).dims.back().size);
  const double matrices = static_cast<double>(n.outputs.at(0).piece_elements());
  w.flops = matrices * 2.0 / 3.0 * m * m * m;
  w.backward_ratio = 4;
}

// The determinant of each matrix of one copy.
std::vector<DoubleTensor> evaluate(const Operator&, const std::vector<DoubleTensor>& in) {
  const DoubleTensor& x = in.at(0);
  const std::int64_t m = x.sizes.back();
  DoubleTensor out{std::vector<std::int64_t>(x.sizes.begin(), x.sizes.end() - 2), {}};
  for (std::size_t at = 0; at < x.data.size(); at += static_cast<std::size_t>(m * m))
    out.data.push_back(determinant::det(x.data.data() + at, m));
  return {out};
}

// Random sizes, the last two made one (at least a 1 x 1 matrix).
std::vector<ParallelTensorShape> example_inputs(std::vector<std::int64_t> sizes) {
  while (sizes.size() < 2) sizes.push_back(2);
  sizes[sizes.size() - 1] = sizes[sizes.size() - 2];
  return {ParallelTensorShape::serial(sizes, DataType::Float32)};
}

}  // namespace

template <>
const OperatorDefinition& define_operator<OpType::Det>() {
  static const OperatorDefinition d{{OpType::Det, "Det", OpCategory::Compute, 1, 1},
                                    {},
                                    {"Det"},
                                    "the determinant of each square matrix in x's last two dims",
                                    {},
                                    &infer,
                                    &work,
                                    SliceLayout{2, 0},
                                    &evaluate,
                                    {},
                                    &example_inputs};
  return d;
}

}  // namespace unity
