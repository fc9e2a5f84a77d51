// Which replicas are copies and which are partial sums, operator by operator. The shape inference
// of the core checks degrees; this checks meaning: a non-linear operator must not read partial
// sums, a Reduce must sum partial results (summing copies would scale the value), operators that
// consume a replica dimension (a Linear's input copies, one per output-channel task) must be given
// copies.
#include "unity/core/shapes/replica_meaning.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/ops/arithmetic.h"
#include "unity/core/ops/index_operators.h"
#include "unity/core/ops/operator_definition.h"

namespace unity {
namespace {

template <typename... Args>
[[noreturn]] void fail_at(const Graph& g, NodeId node, fmt::format_string<Args...> f,
                          Args&&... args) {
  throw ReplicaMeaningError(g.describe(node) + ": " + fmt::format(f, std::forward<Args>(args)...));
}

void require_copies(const Graph& g, const Node& n, const std::vector<ReplicaLayout>& in, int slot,
                    const char* why) {
  if (in[slot].has_partial())
    fail_at(g, n.id,
            "input {} holds partial sums ({} replicas: {}) but {}; a Reduce or AllReduce "
            "must sum them first",
            slot, in[slot].size(), in[slot].to_string(), why);
}

void require_all_copies(const Graph& g, const Node& n, const std::vector<ReplicaLayout>& in,
                        const char* why) {
  for (int i = 0; i < static_cast<int>(in.size()); ++i) require_copies(g, n, in, i, why);
}

// The replicas of operands broadcast like numpy's (Add, ..., Where): each operand's innermost
// replicas, one per partition it is broadcast to, must be copies; the outer ones are the output's.
ReplicaLayout binary_layout(const Graph& g, const Node& n, const std::vector<ReplicaLayout>& in) {
  std::vector<ReplicaLayout> outer(in.size());
  for (int slot = 0; slot < static_cast<int>(in.size()); ++slot) {
    const int k = broadcast_degree(g, n, slot);
    const auto split = in[slot].split_inner(k);
    if (!split || split->second.has_partial())
      fail_at(g, n.id,
              "input {} is broadcast to {} partitions, so its innermost {} replicas must be "
              "copies; its replicas are {}",
              slot, k, k, in[slot].to_string());
    outer[slot] = split->first;
  }
  const ReplicaLayout& a = outer[0];
  bool partial = false;
  for (const auto& o : outer) partial = partial || o.has_partial();
  if (!partial) return ReplicaLayout::copies(a.size());
  if (is_broadcast_operator(n.op.type))
    fail_at(g, n.id, "reads partial sums, but comparisons, logic, selection and {} are not linear",
            n.op.type == OpType::Arithmetic ? n.op.attrs.get_string("function", "") : "the rest");
  const ReplicaLayout& b = outer[1];
  switch (n.op.type) {
    case OpType::Add:
    case OpType::Sub:
      // (a1 + a2) + (b1 + b2) is a sum of partial results only when both operands are split alike.
      if (a != b)
        fail_at(g, n.id,
                "adds operands whose replicas differ ({} and {}): partial sums can only be "
                "added to partial sums of the same split",
                a.to_string(), b.to_string());
      return a;
    case OpType::Mul:
      if (a.has_partial() && b.has_partial())
        fail_at(g, n.id,
                "multiplies two partial sums: the product of sums is not the sum of the "
                "products; reduce one of them first");
      return a.has_partial() ? a : b;
    default:  // Div
      if (b.has_partial())
        fail_at(g, n.id, "divides by partial sums ({}): reduce the divisor first", b.to_string());
      return a;
  }
}

}  // namespace

int broadcast_degree(const Graph& g, const Node& n, int slot) {
  const auto& out = n.outputs.at(0);
  const auto& s = g.shape(n.inputs[slot]);
  const int offset = out.rank() - s.rank();
  int k = 1;
  for (int j = 0; j < out.rank(); ++j) {
    const int i = j - offset;
    if (i < 0 || (s.dims[i].size == 1 && out.dims[j].size != 1)) k *= out.dims[j].degree;
  }
  return k;
}

bool is_linear_unary(OpType t) {
  const PointwiseFunction* f = pointwise_function(t);
  return (f && f->linear) || t == OpType::Dropout;
}

std::vector<ReplicaLayout> replica_output_layouts(const Graph& g, const Node& n,
                                                  const std::vector<ReplicaLayout>& in) {
  const auto& out = n.outputs.at(0);
  const OpType t = n.op.type;
  switch (t) {
    case OpType::Input:
    case OpType::Weight:
    case OpType::Constant:
      return {ReplicaLayout{}};
    case OpType::Partition:
    case OpType::Combine:
      return {in[0]};
    case OpType::Replicate:
      return {in[0].with_inner({static_cast<int>(n.op.attrs.get_int("degree")), false})};
    case OpType::Reduce:
    case OpType::AllReduce: {
      const int k = static_cast<int>(n.op.attrs.get_int("degree"));
      const auto split = in[0].split_inner(k);
      if (!split)
        fail_at(g, n.id, "cannot sum groups of {} replicas out of {}", k, in[0].to_string());
      if (split->second != ReplicaLayout::partials(k))
        fail_at(g, n.id,
                "sums {} replicas that are {}, not partial sums: the result would be {} "
                "times too large",
                k, split->second.to_string(), k);
      if (t == OpType::Reduce) return {split->first};
      return {split->first.with_inner({k, false})};
    }
    case OpType::Pipeline:
    case OpType::Batch:
      fail_at(g, n.id, "pipeline parallelism (Pipeline/Batch) is not supported by the executor");
    case OpType::Linear:
    case OpType::MatMul:
    case OpType::BatchMatMul:
    case OpType::Conv2D:
    case OpType::ConvTranspose:
    case OpType::MultiHeadAttention:
    case OpType::LatentAttention:
    case OpType::Experts:
    case OpType::Embedding:
    case OpType::EmbeddingBag:
      require_all_copies(g, n, in, "each task reads one copy");
      if (out.replica > 1 && n.op.attrs.get_string("activation", "none") != "none")
        fail_at(g, n.id,
                "applies activation '{}' to partial sums (reduction degree {}); the "
                "activation must follow the Reduce",
                n.op.attrs.get_string("activation"), out.replica);
      return {ReplicaLayout::partials(out.replica)};
    case OpType::Pool2D:
      if (n.op.attrs.get_string("pool") == "max")
        require_all_copies(g, n, in, "max pooling is not linear");
      return {in[0]};
    case OpType::SoftmaxCrossEntropy:
      // Split classes (vocab_parallel): one share of the loss per block, summed by a Reduce.
      require_all_copies(g, n, in, "it is not linear");
      return {in[0].with_inner({g.shape(n.inputs[0]).dims.back().degree, true})};
    case OpType::BatchNorm:
    case OpType::LayerNorm:
    case OpType::Softmax:
    case OpType::MSELoss:
      require_all_copies(g, n, in, "it is not linear");
      return {in[0]};
    case OpType::Add:
    case OpType::Sub:
    case OpType::Mul:
    case OpType::Div:
      return {binary_layout(g, n, in)};
    case OpType::Concat:
      for (std::size_t i = 1; i < in.size(); ++i)
        if (in[i] != in[0] && (in[i].has_partial() || in[0].has_partial()))
          fail_at(g, n.id, "concatenates inputs whose replicas differ ({} and {})",
                  in[0].to_string(), in[i].to_string());
      return {in[0]};
    case OpType::Split:
      return std::vector<ReplicaLayout>(n.outputs.size(), in[0]);
    case OpType::GatherND:
    case OpType::ScatterND:
      require_all_copies(g, n, in, "it picks or places by index");
      return {in[0]};
    case OpType::Pad:
      // Linear (partial sums padded are partial sums of the result) unless it adds a non-zero
      // constant.
      if (n.op.attrs.get_string("mode", "constant") == "constant" &&
          n.op.attrs.get_double("value", 0.0) != 0.0)
        require_all_copies(g, n, in, "it pads with a non-zero constant");
      return {in[0]};
    case OpType::Reshape:
    case OpType::Flatten:
    case OpType::Transpose:
    case OpType::Expand:
    case OpType::Resize:  // linear: resampled partial sums are partial sums of the result
      return {in[0]};
    case OpType::ReduceSum:
    case OpType::ReduceMean:
    case OpType::Reduction: {
      // Reduction is not linear (|x|, x^2, max, ...): it reads copies, and a split reduced dim
      // (l1, sum_square only, shape inference says) leaves partial sums.
      if (t == OpType::Reduction) require_all_copies(g, n, in, "it is not linear");
      const int extra = out.replica / in[0].size();
      return {in[0].with_inner({extra, true})};
    }
    default:
      if (is_broadcast_operator(t)) return {binary_layout(g, n, in)};
      if (is_index_operator(t)) {
        // Picking by value or by index is not linear in the indices (nor TopK in x).
        require_all_copies(g, n, in, "it picks by value or by index");
        return std::vector<ReplicaLayout>(n.outputs.size(), in[0]);
      }
      if (!is_linear_unary(t)) require_all_copies(g, n, in, "it is not linear");
      return {in[0]};
  }
}

ReplicaLayout replica_layout_of(const Graph& g, TensorRef t,
                                std::map<TensorRef, ReplicaLayout>& known) {
  // Depth-first over the producers whose outputs have replicas, with a stack of our own: a replica
  // dimension usually runs a few operators (a Replicate or a split reduction to its Reduce), but a
  // replicated activation may run through the whole model.
  auto layout = [&](TensorRef r) -> const ReplicaLayout* {
    static const ReplicaLayout none;
    if (g.shape(r).replica == 1) return &none;
    auto it = known.find(r);
    return it == known.end() ? nullptr : &it->second;
  };
  if (const ReplicaLayout* l = layout(t)) return *l;
  std::vector<NodeId> stack{t.node};
  while (!stack.empty()) {
    const Node& n = g.node(stack.back());
    if (known.count({n.id, 0})) {
      stack.pop_back();
      continue;
    }
    std::vector<ReplicaLayout> in;
    for (const auto& input : n.inputs) {
      const ReplicaLayout* l = layout(input);
      if (l)
        in.push_back(*l);
      else
        stack.push_back(input.node);
    }
    if (in.size() < n.inputs.size()) continue;  // producers first
    const auto out = replica_output_layouts(g, n, in);
    for (int k = 0; k < static_cast<int>(out.size()); ++k) known[{n.id, k}] = out[k];
    stack.pop_back();
  }
  const ReplicaLayout* l = layout(t);
  return l ? *l : ReplicaLayout{};
}

}  // namespace unity
