#pragma once
// Helpers shared by the shape-inference files: each check throws a ShapeError whose message says
// which input, which dimension and which degree is wrong, and why.
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/pcg/operator.h"
#include "unity/core/shapes/parallel_tensor_shape.h"

namespace unity::shape_rules {

using Shapes = std::vector<ParallelTensorShape>;

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw ShapeError(fmt::format(f, std::forward<Args>(args)...));
}

inline void expect_rank(const ParallelTensorShape& s, int rank, const char* what) {
  if (s.rank() != rank)
    fail("{} must have rank {}, got {} {}", what, rank, s.rank(), s.to_string());
}

inline void expect_min_rank(const ParallelTensorShape& s, int rank, const char* what) {
  if (s.rank() < rank)
    fail("{} must have rank >= {}, got {} {}", what, rank, s.rank(), s.to_string());
}

inline void expect_size(const ParallelTensorShape& s, int dim, std::int64_t size,
                        const char* what) {
  if (s.dims[dim].size != size)
    fail("{} dim {} must have size {}, got {} (shape {})", what, dim, size, s.dims[dim].size,
         s.to_string());
}

inline void expect_degree(const ParallelTensorShape& s, int dim, int degree, const char* what,
                          const char* why) {
  if (s.dims[dim].degree != degree)
    fail("{} dim {} has degree {} but must have degree {} ({}); shape {}", what, dim,
         s.dims[dim].degree, degree, why, s.to_string());
}

inline void expect_replica(const ParallelTensorShape& s, int replica, const char* what,
                           const char* why) {
  if (s.replica != replica)
    fail("{} has replica degree {} but must have {} ({}); shape {}", what, s.replica, replica, why,
         s.to_string());
}

inline void expect_floating(const ParallelTensorShape& s, const char* what) {
  if (!is_floating(s.dtype))
    fail("{} must be a floating-point tensor, got {}", what, s.to_string());
}

inline void expect_integer(const ParallelTensorShape& s, const char* what) {
  if (is_floating(s.dtype))
    fail("{} must be an integer tensor (indices), got {}", what, s.to_string());
}

// Product of the degrees of dims [begin, end).
inline int degree_product(const ParallelTensorShape& s, int begin, int end) {
  int p = 1;
  for (int i = begin; i < end; ++i) p *= s.dims[i].degree;
  return p;
}

inline void expect_positive(std::int64_t v, const char* attr) {
  if (v <= 0) fail("attribute '{}' must be positive, got {}", attr, v);
}

// Reads a 2-element attribute such as kernel or stride, with a default.
std::pair<std::int64_t, std::int64_t> pair_attr(const Operator& op, const char* name,
                                                std::vector<std::int64_t> fallback);

// Validates an "activation" attribute when present.
void check_activation(const Operator& op);

Shapes infer_source(const Operator& op, const Shapes& in);
Shapes infer_dense(const Operator& op, const Shapes& in);
Shapes infer_convolution(const Operator& op, const Shapes& in);
Shapes infer_normalization(const Operator& op, const Shapes& in);
Shapes infer_embedding(const Operator& op, const Shapes& in);
Shapes infer_elementwise(const Operator& op, const Shapes& in);
Shapes infer_layout(const Operator& op, const Shapes& in);
Shapes infer_reduction(const Operator& op, const Shapes& in);
// Softmax and the operators with an AxisFunction: the shape of x, whose axis is whole.
Shapes infer_along_axis(const Operator& op, const Shapes& in);
Shapes infer_parallel(const Operator& op, const Shapes& in);
// Resize: the listed axes resized and whole, the other dims pass through.
Shapes infer_resize(const Operator& op, const Shapes& in);
// TopK, GatherElements, ScatterElements, OneHot, ArgMax, ArgMin (shape_inference_index.cpp).
Shapes infer_index(const Operator& op, const Shapes& in);
// Experts (shape_inference_experts.cpp).
Shapes infer_experts(const Operator& op, const Shapes& in);
// Pad, GatherND, ScatterND (shape_inference_pad.cpp).
Shapes infer_pad_nd(const Operator& op, const Shapes& in);
// Compare, Logical, Where, Cast (shape_inference_mask.cpp).
Shapes infer_mask(const Operator& op, const Shapes& in);
// Operands broadcast like numpy's (shape_inference_mask.cpp): a dim of one size on every operand
// that has it keeps that size's degree, a broadcast dim has degree 1, and a broadcast operand's
// replica covers the partitions it is broadcast to. The output in type `dtype`.
ParallelTensorShape broadcast_operands(const Shapes& in, DataType dtype);

}  // namespace unity::shape_rules
