#pragma once
// The Reduction operator: x reduced over its `axes` by one of ONNX's other reductions (ReduceSum
// and ReduceMean are operators of their own), named by the `reduction` attribute. One arithmetic,
// in double, serves the executor's host kernel (forward and backward) and the rule evaluator.
//
// Degrees: a kept dim splits freely. A reduced dim may split only where the parts combine by a
// sum (l1, sum_square: each block's result is a partial sum, the output's replica degree grows as
// for ReduceSum); max, min, prod, l2, log_sum and log_sum_exp read the reduced dims whole.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "unity/core/pcg/operator.h"

namespace unity {

enum class ReductionKind { Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

// The `reduction` attribute's values, in ReductionKind order: "max", "min", "prod", "l1", "l2",
// "sum_square", "log_sum", "log_sum_exp".
const std::vector<std::string>& reduction_names();
// The node's reduction; throws ShapeError when the attribute is missing or names none.
ReductionKind reduction_kind(const Operator& op);
std::string_view to_string(ReductionKind k);
// The ONNX operator each reduction imports from (ReduceMax, ... ReduceLogSumExp), and back.
std::string_view reduction_onnx_type(ReductionKind k);
bool reduction_from_onnx_type(std::string_view op_type, ReductionKind& k);

// Blocks of a reduced dim combine by a sum: a split reduced dim leaves partial sums.
bool reduction_sums_parts(ReductionKind k);
// An exp or log per input element (the cost model's transcendental work).
bool reduction_transcendental(ReductionKind k);

// x of `shape` (row-major) reduced over `axes` (non-negative, any order): y holds the kept
// elements in row-major order of `shape` with the reduced axes dropped (keepdims does not change
// the layout).
void reduction_forward(ReductionKind k, const std::vector<std::int64_t>& shape,
                       const std::vector<int>& axes, const double* x, double* y);
// dx += dy's contribution, given x and the forward's y. Max and min share dy among the elements
// that equal the result; prod's derivative is the product of the other elements (zeros counted
// apart, so a single zero gets the product of the rest).
void reduction_backward(ReductionKind k, const std::vector<std::int64_t>& shape,
                        const std::vector<int>& axes, const double* x, const double* y,
                        const double* dy, double* dx);

}  // namespace unity
