// The parallel operators of paper 3.3 and the sources. Partition/Combine change a dimension's
// degree, Replicate/Reduce the replica degree, Pipeline/Batch a dimension's size; AllReduce is
// Reduce followed by Replicate, fused, so the shape is unchanged.
#include "shape_rules.h"

namespace unity::shape_rules {
namespace {

int degree_attr(const Operator& op) {
  const std::int64_t d = op.attrs.get_int("degree");
  if (d < 1 || d > (1 << 20)) fail("attribute 'degree' must be between 1 and 2^20, got {}", d);
  return static_cast<int>(d);
}

}  // namespace

Shapes infer_source(const Operator& op, const Shapes&) {
  const auto& shape = op.attrs.get_ints("shape");
  for (auto s : shape)
    if (s <= 0) fail("attribute 'shape' must hold positive sizes, got {}", s);
  DataType dtype;
  try {
    dtype = data_type_from_string(op.attrs.get_string("dtype", "float32"));
  } catch (const InputError& e) {
    fail("{}", e.what());
  }
  auto out = ParallelTensorShape::serial(shape, dtype);
  if (op.type == OpType::Constant) {
    if (!op.values) fail("a Constant must hold its values");
    if (op.values->size() != out.num_elements())
      fail("holds {} values for a shape of {} elements", op.values->size(), out.num_elements());
    if (op.values->is_integer() == is_floating(dtype))
      fail("holds {} values for a {} tensor", op.values->is_integer() ? "integer" : "floating",
           to_string(dtype));
  } else if (op.values) {
    fail("only a Constant holds values");
  }
  return {out};
}

Shapes infer_parallel(const Operator& op, const Shapes& in) {
  ParallelTensorShape y = in[0];
  const int degree = degree_attr(op);
  switch (op.type) {
    case OpType::Replicate:
      y.replica *= degree;
      return {y};
    case OpType::Reduce:
    case OpType::AllReduce:
      if (y.replica % degree != 0)
        fail("degree {} does not divide the input's replica degree {}", degree, y.replica);
      if (op.type == OpType::Reduce) y.replica /= degree;
      return {y};
    default:
      break;
  }
  const int dim = y.axis(static_cast<int>(op.attrs.get_int("dim")));
  auto& d = y.dims[dim];
  switch (op.type) {
    case OpType::Partition:
      if (d.size % (static_cast<std::int64_t>(d.degree) * degree) != 0)
        fail("dim {} of size {} cannot be split into {} x {} equal pieces", dim, d.size, d.degree,
             degree);
      d.degree *= degree;
      break;
    case OpType::Combine:
      if (d.degree % degree != 0)
        fail("degree {} does not divide dim {}'s degree {}", degree, dim, d.degree);
      d.degree /= degree;
      break;
    case OpType::Pipeline:
      if (d.size % degree != 0 || (d.size / degree) % d.degree != 0)
        fail("dim {} of size {} (degree {}) cannot be pipelined in {} stages", dim, d.size,
             d.degree, degree);
      d.size /= degree;
      break;
    default:  // Batch
      d.size *= degree;
      break;
  }
  return {y};
}

}  // namespace unity::shape_rules
