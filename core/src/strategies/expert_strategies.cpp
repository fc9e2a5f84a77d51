#include "unity/core/strategies/expert_strategies.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "unity/core/cost/cost_model.h"
#include "unity/core/errors.h"
#include "unity/core/ops/attention_core.h"
#include "unity/core/rules/substitution.h"
#include "unity/core/search/layout_conversion.h"
#include "unity/core/search/substitution_search.h"
#include "unity/core/strategies/data_parallel.h"

namespace unity {
namespace {

// Applies every rule of `names` wherever it matches, with degree `d`.
// Each operator is rewritten at most once: matches on nodes an earlier rule of the list made are
// left alone.
Graph apply_rules(Graph g, const RuleSet& rules, const std::vector<std::string>& names, int d,
                  std::vector<AppliedSubstitution>& applied, NodeId fresh_from = -1) {
  if (fresh_from < 0) fresh_from = g.next_id();
  for (const auto& name : names) {
    const Rule* rule = rules.find(name);
    if (!rule)
      throw std::logic_error("expert strategy: the built-in rule '" + name + "' is missing");
    const std::size_t before = applied.size();
    g = apply_everywhere(g, *rule, {name, ""}, {d}, applied, fresh_from);
    // The strategy's own layout, not a user's --pin.
    for (std::size_t i = before; i < applied.size(); ++i) applied[i].pinned = false;
  }
  return g;
}

// The rules that make Megatron-LM's attention and MLP blocks tensor-parallel.
std::vector<std::string> megatron_block_rules(bool experts_by_width = false) {
  // The gated MLP first: its down projection would otherwise match a plain block's second Linear.
  // A mixture-of-experts layer's experts split over the group (each device its experts, every
  // token copied, the outputs summed: Megatron-Core's expert parallelism inside a tensor-parallel
  // group, with ETP 1), or each expert's width split (ETP = tp).
  // Multi-head latent attention splits its heads as Megatron-Core's MLA does: the down
  // projections and their norms copied, the up projections and the output projection split.
  std::vector<std::string> names = {
      "self_attention_head_parallel", "attention_head_parallel", "latent_attention_head_parallel",
      "latent_attention_direct_q_head_parallel", "mlp_swiglu_tensor_parallel"};
  if (experts_by_width)
    names.insert(names.end(), {"experts_ffn_parallel", "experts_gelu_ffn_parallel"});
  else
    names.insert(names.end(), {"experts_expert_parallel", "experts_gelu_expert_parallel"});
  for (const char* act : {"relu", "gelu", "sigmoid", "tanh"})
    for (const char* fused : {"", "_fused"})
      for (const char* bias : {"", "_bias"})
        names.push_back(fmt::format("mlp{}{}_{}_tensor_parallel", fused, bias, act));
  return names;
}

// Megatron-LM (Shoeybi et al.): inside groups of `tp` devices, attention heads are split across the
// group and each MLP block is a column-parallel Linear followed by a row-parallel one; the groups
// run data-parallel. tp must divide the heads and a node.
std::optional<ExpertStrategy> megatron(const Graph& model, int devices, int tp) {
  if (devices % tp != 0) return std::nullopt;
  const int dp = devices / tp;
  try {
    Graph g = make_data_parallel(model, dp);
    const RuleSet& rules = default_rules();
    std::vector<AppliedSubstitution> applied;
    g = apply_rules(std::move(g), rules, megatron_block_rules(), tp, applied);
    g = apply_rules(std::move(g), rules, {"reduce_replicate_allreduce"}, tp, applied);
    if (g.count(OpType::Reduce) + g.count(OpType::AllReduce) == 0) return std::nullopt;
    g.validate();
    return ExpertStrategy{fmt::format("megatron tp{} x dp{}", tp, dp), std::move(g),
                          std::move(applied)};
  } catch (const InputError&) {
    return std::nullopt;  // the model has no layout of this degree
  }
}

// The serial model rebuilt with the operators in `serial_ops` whole on one device each and every
// other operator data-parallel over `n` devices where its shapes allow (else whole as well): data
// inputs whose leading dim is the batch are split along it, other tensors replicated, and
// activations combined or split where the two kinds meet.
Graph mixed_parallel(const Graph& model, int n, const std::set<NodeId>& serial_ops) {
  std::int64_t batch = model.batch_size;
  Graph g;
  g.name = model.name;
  g.batch_size = model.batch_size;
  std::map<NodeId, TensorRef> whole;  // model tensor (output 0 of a node) -> serial copy in g
  std::map<NodeId, TensorRef> split;  // -> data-parallel copy in g
  std::map<NodeId, NodeId> mapped;    // model node -> node in g (multi-output nodes)
  auto serial_of = [&](TensorRef t) -> TensorRef {
    if (auto it = whole.find(t.node); it != whole.end() && t.index == 0) return it->second;
    if (auto it = split.find(t.node); it != split.end() && t.index == 0) {
      const auto& s = g.shape(it->second);
      const TensorRef c =
          convert_layout(g, it->second, ParallelTensorShape::serial(s.sizes(), s.dtype),
                         model.node(t.node).op.name + ".gather");
      whole[t.node] = c;
      return c;
    }
    return {mapped.at(t.node), t.index};
  };
  auto parallel_of = [&](TensorRef t) -> TensorRef {
    if (auto it = split.find(t.node); it != split.end() && t.index == 0) return it->second;
    const TensorRef s = serial_of(t);
    const auto& shape = g.shape(s);
    const Node& src = model.node(t.node);
    const bool batched =
        shape.rank() > 0 && shape.dims[0].size == batch && src.op.type == OpType::Input;
    Operator op =
        batched ? Operator{OpType::Partition,
                           {{"dim", std::int64_t{0}}, {"degree", std::int64_t{n}}},
                           src.op.name + ".partition"}
                : Operator{
                      OpType::Replicate, {{"degree", std::int64_t{n}}}, src.op.name + ".replicate"};
    const TensorRef p{g.add(std::move(op), {s}), 0};
    if (t.index == 0) split[t.node] = p;
    return p;
  };
  for (NodeId id : model.topological_order()) {
    const Node& node = model.node(id);
    if (is_source_op(node.op.type)) {
      const NodeId to = g.add(node.op, {});
      mapped[id] = to;
      whole[id] = {to, 0};
      continue;
    }
    // Operators with weights run as chosen; the others follow their inputs: data-parallel when
    // one of them is, whole when all are whole (an activation after a model-parallel layer stays
    // with it, a concat of model-parallel tables feeds data-parallel layers).
    bool want_parallel = !serial_ops.count(id);
    bool has_weight = false;
    bool any_split = false;
    for (const auto& in : node.inputs) {
      const bool source = is_source_op(model.node(in.node).op.type);
      has_weight |= model.node(in.node).op.type == OpType::Weight;
      any_split |= !source && split.count(in.node) && in.index == 0;
    }
    bool any_activation = false;
    for (const auto& in : node.inputs) any_activation |= !is_source_op(model.node(in.node).op.type);
    if (!has_weight && any_activation) want_parallel = any_split;
    NodeId added = -1;
    if (want_parallel) {
      try {
        std::vector<TensorRef> inputs;
        for (const auto& in : node.inputs) inputs.push_back(parallel_of(in));
        added = g.add(node.op, std::move(inputs));
        split[id] = {added, 0};
      } catch (const ShapeError&) {
        added = -1;  // not data-parallel here: run it whole
      }
    }
    if (added < 0) {
      std::vector<TensorRef> inputs;
      for (const auto& in : node.inputs) inputs.push_back(serial_of(in));
      added = g.add(node.op, std::move(inputs));
      whole[id] = {added, 0};
    }
    mapped[id] = added;
  }
  // Parallel operators nobody reads (a serial operator took the whole tensor instead).
  for (bool removed = true; removed;) {
    removed = false;
    for (const auto& [id, node] : g.nodes())
      if (is_parallel_op(node.op.type) && g.uses(id).empty()) {
        g.remove(id);
        removed = true;
        break;
      }
  }
  cancel_inverse_parallel_ops(g);
  sum_partial_reductions(g);
  g.validate();
  return g;
}

// Neo (Mudigere et al.), the paper's DLRM and CANDLE-Uno baseline: communication-intensive
// operators (embedding tables, and operators whose weight synchronisation would take longer than
// their computation) run model-parallel, each on one device (the machine mapping spreads them over
// the devices), and everything else data-parallel.
std::optional<ExpertStrategy> neo(const Graph& model, const MachineSpec& machine) {
  const int n = machine.num_devices();
  if (n < 2) return std::nullopt;
  const CostModel costs(machine);
  std::set<NodeId> model_parallel;
  for (const auto& [id, node] : model.nodes()) {
    if (!is_compute_op(node.op.type)) continue;
    if (node.op.type == OpType::Embedding || node.op.type == OpType::EmbeddingBag) {
      model_parallel.insert(id);
      continue;
    }
    double weight_bytes = 0;
    for (const auto& in : node.inputs)
      if (model.node(in.node).op.type == OpType::Weight)
        weight_bytes += static_cast<double>(model.shape(in).bytes());
    if (weight_bytes == 0) continue;
    std::vector<int> all(n);
    for (int i = 0; i < n; ++i) all[i] = i;
    const OpTimes t = costs.task_times(model, id, machine.device(0));
    if (costs.allreduce_time(all, weight_bytes) > (t.forward + t.backward) / n)
      model_parallel.insert(id);
  }
  if (model_parallel.empty()) return std::nullopt;
  try {
    Graph g = mixed_parallel(model, n, model_parallel);
    return ExpertStrategy{
        fmt::format("neo: {} operators model-parallel, the rest data-parallel x{}",
                    model_parallel.size(), n),
        std::move(g),
        {}};
  } catch (const InputError&) {
    return std::nullopt;  // the mixed layout does not exist for this model
  }
}

}  // namespace

std::vector<ExpertStrategy> expert_strategies(const Graph& model, const MachineSpec& machine) {
  std::vector<ExpertStrategy> out;
  const int n = machine.num_devices();
  try {
    out.push_back({fmt::format("data-parallel x{}", n), make_data_parallel(model, n), {}});
  } catch (const InputError&) {
  }
  if (has_attention(model)) {
    for (int tp = 2; tp <= machine.devices_per_node && tp <= n; ++tp) {
      if (machine.devices_per_node % tp != 0) continue;
      if (auto s = megatron(model, n, tp)) out.push_back(std::move(*s));
    }
  }
  if (auto s = neo(model, machine)) out.push_back(std::move(*s));
  return out;
}

ExpertStrategy megatron_tensor_parallel(const Graph& serial, int tp, bool experts_by_width) {
  if (tp <= 1) return {"serial", serial, {}};
  const RuleSet& rules = default_rules();
  std::vector<AppliedSubstitution> applied;
  const NodeId original_below = serial.next_id();
  Graph g = apply_rules(serial, rules, megatron_block_rules(experts_by_width), tp, applied);
  // The head's Linear split over the vocabulary (column-parallel), the embedding table over its
  // rows, the loss over the same classes so the logits are never gathered; the operators the
  // block rules rewrote are not matched again.
  g = apply_rules(std::move(g), rules,
                  {"linear_output_parallel", "linear_bias_output_parallel",
                   "embedding_row_parallel", "cross_entropy_vocab_parallel"},
                  tp, applied, original_below);
  g = apply_rules(std::move(g), rules, {"cancel_combine_partition", "reduce_replicate_allreduce"},
                  tp, applied);
  g.validate();
  const bool by_width = std::any_of(applied.begin(), applied.end(), [](const auto& a) {
    return a.rule == "experts_ffn_parallel" || a.rule == "experts_gelu_ffn_parallel";
  });
  return {applied.empty() ? std::string("serial")
                          : fmt::format("megatron tp{}{}", tp,
                                        by_width ? ", experts split by width (etp)" : ""),
          std::move(g), std::move(applied)};
}

}  // namespace unity
