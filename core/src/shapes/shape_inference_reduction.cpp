// Softmax, ReduceSum/ReduceMean/Reduction and the losses. A partitioned reduced dimension yields
// partial results (the output's replica degree grows) rather than an error: exactly how reduction
// parallelism appears.
#include <algorithm>
#include <set>

#include "shape_rules.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/ops/reduction.h"

namespace unity::shape_rules {
namespace {

// ReduceSum, ReduceMean and Reduction. A Reduction whose blocks do not combine by a sum (max,
// min, prod, l2, log_sum, log_sum_exp) reads its reduced dims whole.
Shapes infer_reduce(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  const auto axes_attr = op.attrs.get_ints("axes");
  const bool keep = op.attrs.get_int("keepdims", 1) != 0;
  bool sums_parts = true;
  if (op.type == OpType::Reduction) {
    const ReductionKind k = reduction_kind(op);
    expect_floating(x, "input 0 (x)");
    sums_parts = reduction_sums_parts(k);
  }
  std::set<int> axes;
  for (auto a : axes_attr)
    if (!axes.insert(x.axis(static_cast<int>(a))).second) fail("axis {} is listed twice", a);
  if (axes.empty()) fail("attribute 'axes' is empty");
  ParallelTensorShape y;
  y.dtype = x.dtype;
  y.replica = x.replica;
  for (int d = 0; d < x.rank(); ++d) {
    if (axes.count(d)) {
      if (!sums_parts)
        expect_degree(x, d, 1, "input 0 (x)",
                      fmt::format("the {} of a split dim is not a sum of its blocks' results",
                                  to_string(reduction_kind(op)))
                          .c_str());
      y.replica *= x.dims[d].degree;
      if (keep) y.dims.push_back({1, 1});
    } else {
      y.dims.push_back(x.dims[d]);
    }
  }
  return {y};
}

// With `vocab_parallel` (Megatron-LM's vocabulary-parallel cross-entropy) the classes may be split:
// each block's device exchanges per-token maxima and sums with the others and keeps a share of the
// loss, so the output holds one partial loss per block (replica degree), which a Reduce sums.
Shapes infer_cross_entropy(const Operator& op, const Shapes& in) {
  const auto& logits = in[0];
  const auto& labels = in[1];
  expect_min_rank(logits, 2, "input 0 (logits)");
  expect_floating(logits, "input 0 (logits)");
  expect_integer(labels, "input 1 (labels)");
  const int r = logits.rank();
  expect_rank(labels, r - 1, "input 1 (labels)");
  for (int d = 0; d < r - 1; ++d)
    if (labels.dims[d] != logits.dims[d])
      fail("labels {} do not match the leading dims of logits {}", labels.to_string(),
           logits.to_string());
  const int classes = logits.dims[r - 1].degree;
  if (op.attrs.get_int("vocab_parallel", 0) == 0)
    expect_degree(logits, r - 1, 1, "input 0 (logits)",
                  "softmax needs every class on one device (unless vocab_parallel)");
  expect_replica(labels, logits.replica * classes, "input 1 (labels)",
                 "read once per logits copy and block of classes");
  ParallelTensorShape y = labels;
  y.dtype = logits.dtype;
  return {y};
}

Shapes infer_mse(const Shapes& in) {
  const auto& p = in[0];
  const auto& t = in[1];
  expect_min_rank(p, 1, "input 0 (prediction)");
  expect_floating(p, "input 0 (prediction)");
  if (p != t) fail("prediction {} and target {} differ", p.to_string(), t.to_string());
  for (int d = 1; d < p.rank(); ++d)
    expect_degree(p, d, 1, "input 0 (prediction)", "the loss sums each sample on one device");
  ParallelTensorShape y;
  y.dtype = p.dtype;
  y.dims = {p.dims[0]};
  y.replica = p.replica;
  return {y};
}

}  // namespace

Shapes infer_along_axis(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  expect_floating(x, "input 0 (x)");
  const int axis = x.axis(static_cast<int>(op.attrs.get_int("axis", -1)));
  expect_degree(x, axis, 1, "input 0 (x)",
                fmt::format("{} reads the whole axis", to_string(op.type)).c_str());
  operator_parameters(op);  // a required parameter that is missing, or not a number, throws
  return {x};
}

Shapes infer_reduction(const Operator& op, const Shapes& in) {
  switch (op.type) {
    case OpType::Softmax:
      return infer_along_axis(op, in);
    case OpType::SoftmaxCrossEntropy:
      return infer_cross_entropy(op, in);
    case OpType::MSELoss:
      return infer_mse(in);
    default:
      return infer_reduce(op, in);
  }
}

}  // namespace unity::shape_rules
