// Element-wise operators keep their input's parallel shape. Binary operators broadcast like numpy:
// a broadcast operand is read by every partition of the dims it lacks, so its replica degree covers
// them.
#include <algorithm>

#include "shape_rules.h"
#include "unity/core/ops/operator_definition.h"

namespace unity::shape_rules {
namespace {

Shapes infer_unary(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  expect_floating(x, "input 0 (x)");
  operator_parameters(op);  // a required parameter that is missing, or not a number, throws
  if (op.type == OpType::Dropout) {
    const double rate = op.attrs.get_double("rate", 0.0);
    if (rate < 0.0 || rate >= 1.0) fail("attribute 'rate' must be in [0, 1), got {}", rate);
  }
  return {x};
}

Shapes infer_binary(const Shapes& in) {
  const auto& a = in[0];
  const auto& b = in[1];
  if (a.dtype != b.dtype) fail("operands differ in type: {} and {}", a.to_string(), b.to_string());
  const int r = std::max(a.rank(), b.rank());
  ParallelTensorShape y;
  y.dtype = a.dtype;
  // Broadcast dims of each operand, as a degree product: those partitions all read the same piece.
  int a_bcast = 1, b_bcast = 1;
  for (int i = 0; i < r; ++i) {
    const int ia = i - (r - a.rank());
    const int ib = i - (r - b.rank());
    const ParallelDim da = ia >= 0 ? a.dims[ia] : ParallelDim{1, 1};
    const ParallelDim db = ib >= 0 ? b.dims[ib] : ParallelDim{1, 1};
    if (da.size == db.size) {
      if (da.degree != db.degree)
        fail("dim {} has degree {} in input 0 but {} in input 1 ({} vs {})", i, da.degree,
             db.degree, a.to_string(), b.to_string());
      y.dims.push_back(da);
    } else if (da.size == 1) {
      if (da.degree != 1) fail("input 0 broadcasts dim {} but has degree {} there", i, da.degree);
      y.dims.push_back(db);
      a_bcast *= db.degree;
    } else if (db.size == 1) {
      if (db.degree != 1) fail("input 1 broadcasts dim {} but has degree {} there", i, db.degree);
      y.dims.push_back(da);
      b_bcast *= da.degree;
    } else {
      fail("cannot broadcast {} with {} (dim {})", a.to_string(), b.to_string(), i);
    }
  }
  if (a.replica % a_bcast != 0 || b.replica % b_bcast != 0 ||
      a.replica / a_bcast != b.replica / b_bcast)
    fail(
        "replica degrees {} and {} do not match for operands {} and {} (a broadcast operand needs "
        "one copy per partition it is broadcast to)",
        a.replica, b.replica, a.to_string(), b.to_string());
  y.replica = a.replica / a_bcast;
  return {y};
}

}  // namespace

Shapes infer_elementwise(const Operator& op, const Shapes& in) {
  if (is_elementwise_binary(op.type)) return infer_binary(in);
  return infer_unary(op, in);
}

}  // namespace unity::shape_rules
