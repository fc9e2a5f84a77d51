#include "unity/core/pipeline/context_parallel_plan.h"

#include <set>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/ops/attention_core.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/pcg/training_loss.h"

namespace unity {
namespace {

constexpr int kSequence = 1;  // [batch, sequence, ...]: the dimension context parallelism splits

[[noreturn]] void refuse(const Graph& g, NodeId id, const std::string& why) {
  throw InputError(fmt::format("context parallelism: {} {}", g.describe(id), why));
}

// Operators that compute each position of the sequence from that position alone (given their
// other operands whole): they run on a shard's rows as they run on all.
bool token_wise(const Graph& g, const Node& n) {
  const OpType t = n.op.type;
  switch (t) {
    case OpType::Linear:
    case OpType::Embedding:
    case OpType::Add:
    case OpType::Sub:
    case OpType::Mul:
    case OpType::Div:
    case OpType::Dropout:
    case OpType::SoftmaxCrossEntropy:
    case OpType::Replicate:
    case OpType::Reduce:
    case OpType::AllReduce:
    case OpType::Partition:
    case OpType::Combine:
      return true;
    case OpType::LayerNorm: {
      // Normalised over the last dims, which must leave the sequence out.
      const int rank = g.shape(n.inputs[0]).rank();
      return rank - n.op.attrs.get_int("normalized_dims", 1) > kSequence;
    }
    case OpType::Softmax:
      return g.shape(n.inputs[0]).axis(static_cast<int>(n.op.attrs.get_int("axis", -1))) !=
             kSequence;
    default:
      return pointwise_function(t) != nullptr;
  }
}

// A view of `old` (the tensor as the tensor-parallel plan splits it) for the same tensor with
// `extra` more pieces along `dim` (the sequence, or -1: the replicas), those pieces `tp` devices
// apart. The extents list the degrees > 1 in tensor order, replicas last.
MachineView widened(const Graph& g, NodeId id, const ParallelTensorShape& old, const MachineView& v,
                    int dim, int extra, int tp) {
  MachineView out = v;
  int at = 0;  // where `dim`'s extent is, or goes
  const int dims = old.rank();
  const int end = dim < 0 ? dims : dim;
  for (int d = 0; d < end; ++d)
    if (old.dims[d].degree > 1) ++at;
  const int degree = dim < 0 ? old.replica : old.dims[dim].degree;
  if (degree == 1) {
    out.extents.insert(out.extents.begin() + at, extra);
    out.strides.insert(out.strides.begin() + at, tp);
    return out;
  }
  // Already split there (sequence parallelism, or copies over the tensor-parallel ranks): the
  // shards nest outside, which one stride says only when the old pieces fill the tp devices.
  if (v.strides[at] * degree != tp)
    refuse(g, id,
           fmt::format("is split {} ways over devices {} apart, which the sequence shards of "
                       "{} devices cannot nest around",
                       degree, v.strides[at], tp));
  out.extents[at] = degree * extra;
  return out;
}

class Splitter {
 public:
  Splitter(const Graph& plan, const std::map<NodeId, MachineView>& views, int tp, int cp,
           std::int64_t sequence)
      : old_(plan), views_(views), tp_(tp), cp_(cp), sequence_(sequence) {
    g_.name = plan.name;
    g_.batch_size = plan.batch_size;
  }

  ContextParallelPlan run() {
    if (sequence_ % cp_ != 0)
      throw InputError(fmt::format(
          "context parallelism: the sequence of {} positions does not split into {} shards",
          sequence_, cp_));
    for (NodeId id : old_.topological_order()) add(old_.node(id));
    // The segment's outputs are handed on whole; its loss stays split (each shard's positions'
    // losses are part of the objective, which averages over them all).
    for (const TensorRef& sink : old_.sinks()) {
      if (!split_.count(sink) || derives_from_loss(old_, sink.node)) continue;
      const TensorRef whole =
          add_parallel(OpType::Combine, map_.at(sink), kSequence, cp_, name_of(sink) + ".cp_out");
      if (auto it = views_.find(sink.node); it != views_.end()) out_.views[whole.node] = it->second;
    }
    out_.pcg = std::move(g_);
    return std::move(out_);
  }

 private:
  std::string name_of(TensorRef t) const { return old_.node(t.node).op.name; }

  TensorRef add_parallel(OpType type, TensorRef x, int dim, int degree, const std::string& name) {
    Operator op;
    op.type = type;
    op.name = name;
    if (dim >= 0) op.attrs.set("dim", std::int64_t{dim});
    op.attrs.set("degree", std::int64_t{degree});
    return {g_.add(std::move(op), {x}), 0};
  }

  // A tensor that is the same on every shard (a weight's), copied onto each of them for an
  // operator reading sequence rows.
  TensorRef copied(TensorRef old) {
    auto it = copies_.find(old);
    if (it != copies_.end()) return it->second;
    const TensorRef t =
        add_parallel(OpType::Replicate, map_.at(old), -1, cp_, name_of(old) + ".cp");
    if (auto v = views_.find(old.node); v != views_.end())
      out_.views[t.node] = widened(old_, old.node, old_.shape(old), v->second, -1, cp_, tp_);
    return copies_[old] = t;
  }

  // An attention's keys or values: the whole sequence on every shard, gathered at shard 0's
  // devices and copied to the others.
  TensorRef gathered(const Node& attention, TensorRef old) {
    auto it = gathers_.find(old);
    if (it != gathers_.end()) return it->second;
    const auto v = views_.find(old.node);
    if (old_.shape(old).dims[kSequence].degree > 1)
      refuse(old_, attention.id, "reads keys and values split along the sequence");
    const TensorRef whole =
        add_parallel(OpType::Combine, map_.at(old), kSequence, cp_, name_of(old) + ".cp_kv");
    if (v != views_.end()) out_.views[whole.node] = v->second;
    const TensorRef t =
        add_parallel(OpType::Replicate, whole, -1, cp_, name_of(old) + ".cp_kv_copies");
    if (v != views_.end())
      out_.views[t.node] = widened(old_, old.node, old_.shape(old), v->second, -1, cp_, tp_);
    return gathers_[old] = t;
  }

  void add(const Node& n) {
    std::vector<TensorRef> inputs;
    bool reads_rows = false;
    for (const auto& in : n.inputs) reads_rows = reads_rows || split_.count(in);
    if (n.op.type == OpType::Input) {
      const auto& s = n.outputs.at(0);
      const NodeId id = g_.add(n.op, {});
      TensorRef t{id, 0};
      if (s.rank() > kSequence && s.dims[kSequence].size == sequence_) {
        t = add_parallel(OpType::Partition, t, kSequence, cp_, n.op.name + ".cp");
        split_.insert(n.output());
      }
      map_[n.output()] = t;
      return;
    }
    if (!reads_rows) {  // a weight's chain, the same on every shard
      for (const auto& in : n.inputs) inputs.push_back(map_.at(in));
      const NodeId id = g_.add(n.op, inputs);
      for (int o = 0; o < static_cast<int>(n.outputs.size()); ++o) map_[{n.id, o}] = {id, o};
      if (auto v = views_.find(n.id); v != views_.end()) out_.views[id] = v->second;
      return;
    }
    if (n.op.type == OpType::LatentAttention)
      refuse(old_, n.id,
             "compresses the keys and values of the whole sequence; the executor splits only "
             "MultiHeadAttention's queries by sequence");
    const bool attention = n.op.type == OpType::MultiHeadAttention;
    if (!attention && !token_wise(old_, n))
      refuse(old_, n.id,
             "reads across the positions of the sequence; the executor splits by sequence only "
             "token-wise operators and attention");
    if (attention && !split_.count(n.inputs[0]))
      refuse(old_, n.id, "reads its queries whole while its keys are split by sequence");
    for (int slot = 0; slot < static_cast<int>(n.inputs.size()); ++slot) {
      const TensorRef in = n.inputs[slot];
      if (attention && (slot == 1 || slot == 2))
        inputs.push_back(gathered(n, in));
      else if (split_.count(in))
        inputs.push_back(map_.at(in));
      else
        inputs.push_back(copied(in));
    }
    NodeId id;
    try {
      id = g_.add(n.op, inputs);
    } catch (const ShapeError& e) {
      refuse(old_, n.id, fmt::format("cannot run on part of the sequence: {}", e.what()));
    }
    for (int o = 0; o < static_cast<int>(n.outputs.size()); ++o) {
      map_[{n.id, o}] = {id, o};
      split_.insert({n.id, o});
    }
    if (auto v = views_.find(n.id); v != views_.end())
      out_.views[id] = widened(old_, n.id, n.outputs.at(0), v->second, kSequence, cp_, tp_);
  }

  const Graph& old_;
  const std::map<NodeId, MachineView>& views_;
  const int tp_, cp_;
  const std::int64_t sequence_;
  Graph g_;
  ContextParallelPlan out_;
  std::map<TensorRef, TensorRef> map_;  // old tensor -> its new form (split where split_ says)
  std::set<TensorRef> split_;           // old tensors that carry sequence rows
  std::map<TensorRef, TensorRef> copies_, gathers_;
};

}  // namespace

std::int64_t attention_sequence(const Graph& graph) {
  for (NodeId id : graph.topological_order()) {
    const Node& n = graph.node(id);
    if (is_attention(n.op.type)) return graph.shape(n.inputs[0]).dims.at(kSequence).size;
  }
  return 0;
}

ContextParallelPlan context_parallel_plan(const Graph& plan,
                                          const std::map<NodeId, MachineView>& views, int tp,
                                          int cp, std::int64_t sequence) {
  if (cp < 1 || tp < 1)
    throw InputError(fmt::format("context parallelism: {} shards of {} devices", cp, tp));
  if (sequence < 1)
    throw InputError(fmt::format(
        "context parallelism: '{}' has no attention whose sequence it could split", plan.name));
  return Splitter(plan, views, tp, cp, sequence).run();
}

}  // namespace unity
