// Compare, Logical, Where and Cast. The first three broadcast their operands like numpy, as Add
// does: a dim of one size on every operand that has it keeps that size's degree (the same on each),
// a dim an operand broadcasts (size 1, or missing) has degree 1 there, and the operand's replica
// degree covers the partitions it is broadcast to. Cast keeps its input's parallel shape.
#include <algorithm>

#include "shape_rules.h"
#include "unity/core/ops/mask_kernels.h"

namespace unity::shape_rules {

ParallelTensorShape broadcast_operands(const Shapes& in, DataType dtype) {
  int r = 0;
  for (const auto& s : in) r = std::max(r, s.rank());
  ParallelTensorShape y;
  y.dtype = dtype;
  std::vector<int> bcast(in.size(), 1);
  auto dim_of = [&](std::size_t t, int i) {
    const int it = i - (r - in[t].rank());
    return it >= 0 ? in[t].dims[it] : ParallelDim{1, 1};
  };
  for (int i = 0; i < r; ++i) {
    std::int64_t size = 1;
    for (std::size_t t = 0; t < in.size(); ++t) {
      const auto s = dim_of(t, i).size;
      if (s == 1) continue;
      if (size != 1 && s != size)
        fail("cannot broadcast input {} {} with the others (dim {} has size {}, not {})", t,
             in[t].to_string(), i, s, size);
      size = s;
    }
    int degree = 0;
    for (std::size_t t = 0; t < in.size(); ++t) {
      const ParallelDim d = dim_of(t, i);
      if (d.size != size) continue;
      if (degree == 0) degree = d.degree;
      if (d.degree != degree)
        fail("dim {} has degree {} in one input but {} in input {} ({})", i, degree, d.degree, t,
             in[t].to_string());
    }
    for (std::size_t t = 0; t < in.size(); ++t) {
      const ParallelDim d = dim_of(t, i);
      if (d.size == size) continue;
      if (d.degree != 1) fail("input {} broadcasts dim {} but has degree {} there", t, i, d.degree);
      bcast[t] *= degree;
    }
    y.dims.push_back({size, degree});
  }
  for (std::size_t t = 0; t < in.size(); ++t)
    if (in[t].replica % bcast[t] != 0 || in[t].replica / bcast[t] != in[0].replica / bcast[0])
      fail(
          "replica degrees do not match: input {} {} against input 0 {} (a broadcast operand "
          "needs one copy per partition it is broadcast to)",
          t, in[t].to_string(), in[0].to_string());
  y.replica = in[0].replica / bcast[0];
  return y;
}

namespace {

ParallelTensorShape broadcast(const Shapes& in, DataType dtype) {
  return broadcast_operands(in, dtype);
}

void expect_mask(const ParallelTensorShape& s, const char* what) {
  if (is_floating(s.dtype))
    fail("{} must be a bool (or integer) mask, got {}", what, s.to_string());
}

}  // namespace

Shapes infer_mask(const Operator& op, const Shapes& in) {
  mask_kernels::Comparison comparison;
  mask_kernels::Logic logic;
  switch (op.type) {
    case OpType::Compare:
      if (!mask_kernels::comparison_of(op.attrs.get_string("comparison", ""), comparison))
        fail(
            "attribute 'comparison' must be equal, less, greater, less_or_equal or "
            "greater_or_equal, got '{}'",
            op.attrs.get_string("comparison", ""));
      if (in.size() == 1 ? !op.attrs.has("scalar") : op.attrs.has("scalar"))
        fail("compares two inputs, or one and the attribute 'scalar'");
      if (in.size() == 2 && in[0].dtype != in[1].dtype)
        fail("operands differ in type: {} and {}", in[0].to_string(), in[1].to_string());
      return {broadcast(in, DataType::Bool)};
    case OpType::Logical: {
      if (!mask_kernels::logic_of(op.attrs.get_string("logic", ""), logic))
        fail("attribute 'logic' must be and, or, xor or not, got '{}'",
             op.attrs.get_string("logic", ""));
      const std::size_t arity = logic == mask_kernels::Logic::Not ? 1 : 2;
      if (in.size() != arity)
        fail("logic '{}' takes {} inputs, got {}", op.attrs.get_string("logic"), arity, in.size());
      for (const auto& s : in) expect_mask(s, "an operand");
      return {broadcast(in, DataType::Bool)};
    }
    case OpType::Where: {
      // x and y are inputs, or attributes of those names (a scalar, a masked fill).
      expect_mask(in[0], "input 0 (condition)");
      const std::size_t attributes = (op.attrs.has("x") ? 1 : 0) + (op.attrs.has("y") ? 1 : 0);
      if (in.size() + attributes != 3)
        fail("takes x and y as inputs or attributes: {} inputs and {} attributes", in.size(),
             attributes);
      if (in.size() == 3 && in[1].dtype != in[2].dtype)
        fail("x and y differ in type: {} and {}", in[1].to_string(), in[2].to_string());
      return {broadcast(in, in.size() > 1 ? in[1].dtype : DataType::Float32)};
    }
    default: {  // Cast
      ParallelTensorShape y = in[0];
      const std::string to = op.attrs.get_string("to", "");
      try {
        y.dtype = data_type_from_string(to);
      } catch (const InputError&) {
        fail("attribute 'to' must name a type (float32, int64, bool, ...), got '{}'", to);
      }
      return {y};
    }
  }
}

}  // namespace unity::shape_rules
