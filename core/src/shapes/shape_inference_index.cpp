// The index operators (TopK, GatherElements, ScatterElements, OneHot, ArgMax, ArgMin): the axis
// they pick along is read whole (degree 1); every other dim may be split, alike on all inputs and
// outputs, each task working on its own rows. A non-axis dim where an input is smaller than the
// output (GatherElements' data, ScatterElements' indices may be larger or smaller there) has
// degree 1. Inputs are read as copies, one per output replica.
#include "shape_rules.h"

namespace unity::shape_rules {
namespace {

void expect_axis_whole(const ParallelTensorShape& s, int axis, const char* what) {
  expect_degree(s, axis, 1, what, "the operator reads the axis whole");
}

// `other`'s non-axis dims against `main`'s (same rank): equal sizes share a degree, smaller or
// larger ones have degree 1 on both; replicas equal.
void expect_aligned(const ParallelTensorShape& main, const char* main_what,
                    const ParallelTensorShape& other, const char* what, int axis) {
  expect_rank(other, main.rank(), what);
  expect_replica(other, main.replica, what, "one copy of every input per task");
  for (int d = 0; d < main.rank(); ++d) {
    if (d == axis) continue;
    if (other.dims[d].size == main.dims[d].size) {
      if (other.dims[d].degree != main.dims[d].degree)
        fail("{} dim {} has degree {} but {} dim {} has degree {} (they must be split alike)", what,
             d, other.dims[d].degree, main_what, d, main.dims[d].degree);
      continue;
    }
    expect_degree(other, d, 1, what, "its size differs from the other input's");
    expect_degree(main, d, 1, main_what, "its size differs from the other input's");
  }
}

Shapes infer_top_k(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  expect_floating(x, "input 0 (x)");
  expect_min_rank(x, 1, "input 0 (x)");
  const int axis = x.axis(static_cast<int>(op.attrs.get_int("axis", -1)));
  const std::int64_t k = op.attrs.get_int("k");
  expect_positive(k, "k");
  if (k > x.dims[axis].size)
    fail("attribute 'k' = {} exceeds the size {} of axis {}", k, x.dims[axis].size, axis);
  expect_axis_whole(x, axis, "input 0 (x)");
  ParallelTensorShape values = x;
  values.dims[axis] = {k, 1};
  ParallelTensorShape indices = values;
  indices.dtype = DataType::Int64;
  return {values, indices};
}

Shapes infer_gather_elements(const Operator& op, const Shapes& in) {
  const auto& data = in[0];
  const auto& idx = in[1];
  expect_min_rank(data, 1, "input 0 (data)");
  expect_integer(idx, "input 1 (indices)");
  const int axis = data.axis(static_cast<int>(op.attrs.get_int("axis", 0)));
  expect_rank(idx, data.rank(), "input 1 (indices)");
  expect_axis_whole(data, axis, "input 0 (data)");
  expect_axis_whole(idx, axis, "input 1 (indices)");
  expect_aligned(idx, "input 1 (indices)", data, "input 0 (data)", axis);
  ParallelTensorShape y = idx;
  y.dtype = data.dtype;
  return {y};
}

Shapes infer_scatter_elements(const Operator& op, const Shapes& in) {
  const auto& data = in[0];
  const auto& idx = in[1];
  const auto& upd = in[2];
  expect_min_rank(data, 1, "input 0 (data)");
  expect_integer(idx, "input 1 (indices)");
  const int axis = data.axis(static_cast<int>(op.attrs.get_int("axis", 0)));
  const std::string reduction = op.attrs.get_string("reduction", "none");
  if (reduction != "none" && reduction != "add")
    fail("attribute 'reduction' must be \"none\" or \"add\", got \"{}\"", reduction);
  expect_rank(idx, data.rank(), "input 1 (indices)");
  if (upd.sizes() != idx.sizes())
    fail("input 2 (updates) {} must have the sizes of input 1 (indices) {}", upd.to_string(),
         idx.to_string());
  if (upd.dtype != data.dtype)
    fail("input 2 (updates) {} must have the type of input 0 (data) {}", upd.to_string(),
         data.to_string());
  expect_axis_whole(data, axis, "input 0 (data)");
  expect_axis_whole(idx, axis, "input 1 (indices)");
  expect_aligned(data, "input 0 (data)", idx, "input 1 (indices)", axis);
  for (int d = 0; d < upd.rank(); ++d)
    if (upd.dims[d].degree != idx.dims[d].degree)
      fail("input 2 (updates) dim {} has degree {} but input 1 (indices) has {} (split alike)", d,
           upd.dims[d].degree, idx.dims[d].degree);
  expect_replica(upd, data.replica, "input 2 (updates)", "one copy of every input per task");
  return {data};
}

// Floating-point indices are truncated to integers, as ONNX casts them; `dtype` (float32, or int64
// for integer off and on values) is the output's.
Shapes infer_one_hot(const Operator& op, const Shapes& in) {
  const auto& idx = in[0];
  if (!is_floating(idx.dtype)) expect_integer(idx, "input 0 (indices)");
  const DataType dtype = data_type_from_string(op.attrs.get_string("dtype", "float32"));
  if (dtype != DataType::Float32 && dtype != DataType::Int64)
    fail("attribute 'dtype' must be float32 or int64, got {}", to_string(dtype));
  const std::int64_t depth = op.attrs.get_int("depth");
  expect_positive(depth, "depth");
  const std::int64_t rank = idx.rank() + 1;
  std::int64_t axis = op.attrs.get_int("axis", -1);
  if (axis < -rank || axis >= rank)
    fail("attribute 'axis' = {} is outside [{}, {})", axis, -rank, rank);
  if (axis < 0) axis += rank;
  ParallelTensorShape y = idx;
  y.dtype = dtype;
  y.dims.insert(y.dims.begin() + axis, ParallelDim{depth, 1});
  return {y};
}

Shapes infer_arg_extreme(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  expect_min_rank(x, 1, "input 0 (x)");
  const int axis = x.axis(static_cast<int>(op.attrs.get_int("axis", 0)));
  expect_axis_whole(x, axis, "input 0 (x)");
  ParallelTensorShape y = x;
  y.dtype = DataType::Int64;
  if (op.attrs.get_int("keepdims", 1) != 0)
    y.dims[axis] = {1, 1};
  else
    y.dims.erase(y.dims.begin() + axis);
  return {y};
}

}  // namespace

Shapes infer_index(const Operator& op, const Shapes& in) {
  switch (op.type) {
    case OpType::TopK:
      return infer_top_k(op, in);
    case OpType::GatherElements:
      return infer_gather_elements(op, in);
    case OpType::ScatterElements:
      return infer_scatter_elements(op, in);
    case OpType::OneHot:
      return infer_one_hot(op, in);
    default:  // ArgMax, ArgMin
      return infer_arg_extreme(op, in);
  }
}

}  // namespace unity::shape_rules
