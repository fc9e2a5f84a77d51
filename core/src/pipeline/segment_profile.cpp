#include "unity/core/pipeline/segment_profile.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "unity/core/mapping/mapping_cost.h"
#include "unity/core/ops/attention_core.h"
#include "unity/core/search/candidate_cost.h"

namespace unity {
namespace {

bool is_dense(OpType t) {
  return t == OpType::Linear || t == OpType::MatMul || t == OpType::BatchMatMul ||
         t == OpType::Conv2D || t == OpType::ConvTranspose || is_attention(t) ||
         t == OpType::Experts;
}

// Whether an operator's backward pass reads its activation inputs (or, for the softmax, its output
// of the same size): products, normalisations and non-linearities do; sums, scalings, layout
// changes, lookups and parallel operators do not, so what they read need not be kept.
bool backward_reads_inputs(OpType t) {
  switch (t) {
    case OpType::Add:
    case OpType::Sub:
    case OpType::ScalarAdd:
    case OpType::ScalarMul:
    case OpType::Identity:
    case OpType::Reshape:
    case OpType::Flatten:
    case OpType::Transpose:
    case OpType::Expand:
    case OpType::Resize:
    case OpType::Pad:
    case OpType::Concat:
    case OpType::Split:
    case OpType::ReduceSum:
    case OpType::ReduceMean:
    case OpType::Embedding:
    case OpType::EmbeddingBag:
      return false;
    default:
      return is_compute_op(t);
  }
}

// Bytes one attention task keeps besides its output, as the backward pass needs them: what its
// projections made (AttentionTask::kept_elements: q and the context, k and v, and a latent
// attention's latents) and, when `scores`, the softmax probabilities [b, heads/d, sq, sk] or, for
// a fused kernel, which recomputes them, the softmax's log-sum-exp [b, heads/d, sq] in fp32.
double attention_internal_bytes(const Graph& g, const Node& n, bool scores,
                                const DeviceSpec& device) {
  const AttentionTask a = attention_task(g, n);
  const double size = static_cast<double>(size_of(g.shape(n.inputs.at(0)).dtype));
  if (scores && runs_fused_attention(n, device)) return a.batch * a.heads * a.sq * 4.0;
  if (scores) return a.batch * a.heads * a.sq * a.keys() * size;
  return a.kept_elements * size;
}

// What one Experts task keeps inside itself for the backward pass (TaskWork's expert_*), in
// bytes: the GEMMs' inputs in fp8 where they run in fp8 (as they were cast, for the weight
// gradients), the up projections' output in the tokens' type; and of those, the activation's
// output, with the seconds of the activation's own pass over the up projections' output.
struct ExpertInternals {
  double bytes = 0, act_output = 0, act_seconds = 0;
};

ExpertInternals expert_internals(const Graph& g, const Node& n, const DeviceSpec& device) {
  const TaskWork w = task_work(g, n.id);
  const double size = static_cast<double>(size_of(g.shape(n.inputs.at(0)).dtype));
  const double gemm_input = runs_fp8_gemms(n, device) && size == 2 ? 1 : size;
  ExpertInternals e;
  e.act_output = w.expert_act_output * gemm_input;
  e.bytes = w.expert_routed_input * gemm_input + e.act_output + w.expert_up_output * size;
  e.act_seconds = (w.expert_up_output + w.expert_act_output) * size /
                  (device.memory_bandwidth * device.memory_efficiency);
  return e;
}

// The tensor a parallel operator passes on, traced back to the compute operator that made it.
TensorRef made_by(const Graph& g, TensorRef t) {
  while (is_parallel_op(g.node(t.node).op.type) && !g.node(t.node).inputs.empty())
    t = g.node(t.node).inputs.at(0);
  return t;
}

bool is_norm(OpType t) { return t == OpType::LayerNorm; }

// The nodes of each mixture-of-experts layer (recompute_modules.h's moe): its Experts operators
// and their routers (what their gates are computed from, and the layer's input is not), with the
// nodes its input comes from, which the layer keeps as its checkpoint.
struct MoeLayers {
  std::set<NodeId> nodes, before;
};

MoeLayers moe_layers(const Graph& g) {
  MoeLayers m;
  auto ancestors = [&](TensorRef from, const std::set<NodeId>& stop, std::set<NodeId>& into) {
    std::vector<NodeId> todo{from.node};
    while (!todo.empty()) {
      const NodeId id = todo.back();
      todo.pop_back();
      if (stop.count(id) || !into.insert(id).second) continue;
      for (const auto& in : g.node(id).inputs) todo.push_back(in.node);
    }
  };
  for (const auto& [id, n] : g.nodes()) {
    if (n.op.type != OpType::Experts || n.inputs.size() < 2) continue;
    ancestors(n.inputs[0], {}, m.before);
    m.nodes.insert(id);
    ancestors(n.inputs[1], m.before, m.nodes);
  }
  return m;
}

bool is_pointwise(OpType t) {
  return (is_elementwise_unary(t) && t != OpType::Dropout) || is_elementwise_binary(t);
}

// The element-wise results a fused kernel recomputes in the backward pass instead of keeping
// (DeviceSpec::fused_elementwise): those of a deterministic element-wise operator read only by
// element-wise operators, whose own inputs the backward pass has (kept, or recomputed in turn).
// SwiGLU's sigmoid and SiLU are; the product the down projection reads is not: a GEMM's backward
// reads its input as it was kept.
std::set<TensorRef> recomputed_elementwise(const Graph& g) {
  std::set<TensorRef> recomputed;
  auto available = [&](TensorRef t) {
    if (recomputed.count(t)) return true;
    for (const Use& u : g.uses(t))
      if (backward_reads_inputs(g.node(u.node).op.type)) return true;
    return false;
  };
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    if (!is_pointwise(n.op.type) || n.outputs.size() != 1 || !is_floating(n.outputs[0].dtype))
      continue;
    const auto uses = g.uses(n.output());
    if (uses.empty()) continue;
    const bool pointwise_readers = std::all_of(uses.begin(), uses.end(), [&](const Use& u) {
      return is_pointwise(g.node(u.node).op.type);
    });
    if (!pointwise_readers) continue;
    const bool inputs_at_hand = std::all_of(n.inputs.begin(), n.inputs.end(), [&](TensorRef in) {
      const OpType producer = g.node(in.node).op.type;
      return producer == OpType::Weight || producer == OpType::Constant ||
             !is_floating(g.shape(in).dtype) || available(in);
    });
    if (inputs_at_hand) recomputed.insert(n.output());
  }
  return recomputed;
}

// The share of an attention task's forward time spent on scores and softmax: the fraction of its
// FLOPs in the two batched products against its projections'. What selective recomputation runs
// again; a fused kernel's backward recomputes the scores already.
double attention_core_share(const Graph& g, const Node& n, const DeviceSpec& device) {
  if (runs_fused_attention(n, device)) return 0;
  const AttentionTask a = attention_task(g, n);
  const double core = a.core_flops();
  return core / (core + a.projection_flops);
}

// What context parallelism exchanges of one attention task (SegmentProfile::Attention): its heads'
// keys and values over the whole sequence, and the time of its products in each pass.
SegmentProfile::Attention attention_exchange(const Graph& g, const Node& n, const OpCost& op,
                                             const DeviceSpec& device) {
  const AttentionTask t = attention_task(g, n);
  SegmentProfile::Attention a;
  a.kv_bytes = t.kv_elements * t.context_parallel *
               static_cast<double>(size_of(g.shape(n.inputs.at(0)).dtype));
  const TaskWork w = task_work(g, op.node, device.fused_attention);
  if (w.flops > 0) {
    a.products_forward = op.forward * w.product_flops / w.flops;
    a.products_backward = op.backward * w.product_backward_flops / (w.flops * w.backward_ratio);
  }
  return a;
}

}  // namespace

double dense_forward_flops(const Graph& graph, FlopCount count) {
  double flops = 0;
  for (const auto& [id, n] : graph.nodes()) {
    if (!is_dense(n.op.type)) continue;
    const TaskWork w = task_work(graph, id);
    flops += w.flops + w.skipped_flops;
    if (count == FlopCount::Causal && is_attention(n.op.type) &&
        n.op.attrs.get_int("causal", 0) != 0)
      flops -= attention_task(graph, n).core_flops() / 2;
  }
  return flops;
}

Recomputed selective_recomputation(const SegmentProfile& s, RecomputeModules modules) {
  Recomputed r;
  auto add = [&r](double seconds, double bytes) {
    r.seconds += seconds;
    r.bytes += bytes;
  };
  if (modules.has(RecomputeModules::kCoreAttention)) add(s.attention_core, s.attention_internals);
  if (modules.has(RecomputeModules::kLayerNorm)) add(s.norm_forward, s.norm_outputs);
  // The whole layer holds its activation's output.
  if (modules.has(RecomputeModules::kMoe))
    add(s.moe_forward, s.moe_internals);
  else if (modules.has(RecomputeModules::kMoeActivation))
    add(s.expert_act_forward, s.expert_act_outputs);
  return r;
}

SegmentProfile profile_segment(const Graph& plan, const CostModel& model) {
  SegmentProfile p;
  const CandidateCost cost = cost_candidate(plan, model);
  if (!cost.mapping.feasible) return p;
  p.feasible = true;
  const auto& mapping = cost.mapping;
  // A stage replica's devices are of one type (its nodes are).
  const DeviceSpec& device = model.machine().device(0);
  double forward = 0, backward = 0, core = 0;
  const MoeLayers moe = moe_layers(plan);
  // Operators whose outputs are partial sums a Reduce completes (a vocabulary-parallel
  // cross-entropy's per-token losses): split already, they are not what sequence parallelism
  // splits.
  std::set<NodeId> reduced;
  for (const auto& [id, n] : plan.nodes())
    if (n.op.type == OpType::Reduce)
      for (const auto& in : n.inputs) reduced.insert(in.node);
  for (const auto& op : mapping.per_op) {
    forward += op.forward;
    backward += op.backward;
    const Node& n = plan.node(op.node);
    if (is_norm(n.op.type)) p.norm_forward += op.forward;
    if (moe.nodes.count(op.node) && !is_parallel_op(n.op.type)) p.moe_forward += op.forward;
    if (is_attention(n.op.type)) {
      core += op.forward * attention_core_share(plan, n, device);
      p.attentions.push_back(attention_exchange(plan, n, op, device));
    }
    if (n.op.type == OpType::Experts) {
      p.experts_time += op.forward + op.backward;
      p.expert_act_forward += expert_internals(plan, n, device).act_seconds;
    }
    const auto& out = n.outputs.at(0);
    // Token-wise operators left whole (a dense operator's whole-sized output is partial sums).
    if (is_compute_op(n.op.type) && !is_dense(n.op.type) && !reduced.count(op.node) &&
        out.piece_elements() == out.num_elements()) {
      p.whole_forward += op.forward;
      p.whole_backward += op.backward;
    }
  }
  // The mapping's critical path, split between the passes as the operators' own times are;
  // collectives run once forward and once backward.
  const double compute = mapping.cost.compute;
  const double share = forward + backward > 0 ? forward / (forward + backward) : 0.5;
  p.communication = mapping.cost.communication;
  p.bytes = mapping.cost.bytes;
  p.forward = compute * share + p.communication / 2;
  p.backward = compute * (1 - share) + p.communication / 2;
  p.attention_core = core;

  const int devices = model.machine().num_devices();
  std::vector<double> params(devices, 0.0), acts(devices, 0.0), whole(devices, 0.0),
      internals(devices, 0.0), fp8_params(devices, 0.0), norm_outputs(devices, 0.0),
      act_outputs(devices, 0.0), moe_internals(devices, 0.0);
  std::vector<std::vector<double>> dense_weights(devices);
  const PlacementGraph placement(plan);
  const std::set<TensorRef> recomputed =
      device.fused_elementwise ? recomputed_elementwise(plan) : std::set<TensorRef>{};
  std::set<std::pair<TensorRef, int>> kept;  // (tensor, device) counted once
  for (const auto& [id, view] : mapping.views) {
    const Node& n = plan.node(id);
    const int tasks = view.num_tasks();
    // What an attention or Experts task keeps inside itself: the same for each of its tasks.
    double probabilities = 0, attention_kept = 0;
    if (is_attention(n.op.type)) {
      probabilities = attention_internal_bytes(plan, n, true, device);
      attention_kept = attention_internal_bytes(plan, n, false, device) + probabilities;
    }
    const ExpertInternals experts =
        n.op.type == OpType::Experts ? expert_internals(plan, n, device) : ExpertInternals{};
    for (int t = 0; t < tasks; ++t) {
      const int dev = view.device(t);
      if (dev < 0 || dev >= devices) continue;
      for (const auto& in : n.inputs) {
        const bool weight = !placement.is_placed(in.node) &&
                            plan.node(placement.source_root(in.node)).op.type == OpType::Weight;
        const auto& shape = plan.shape(in);
        if (weight) {
          params[dev] += static_cast<double>(shape.piece_elements());
          if (n.op.type != OpType::Experts)
            dense_weights[dev].push_back(static_cast<double>(shape.piece_elements()));
          if (runs_fp8_gemms(n, device))
            fp8_params[dev] += static_cast<double>(shape.piece_elements());
          continue;
        }
        // An activation the backward pass reads: kept on the device that reads it.
        if (!backward_reads_inputs(n.op.type) || !is_floating(shape.dtype)) continue;
        if (recomputed.count(in)) continue;
        // Copies of one tensor replicated for several readers (the gate and up projections'
        // input) are one tensor kept: frameworks run them as one GEMM on one saved input.
        TensorRef source = in;
        while (plan.node(source.node).op.type == OpType::Replicate)
          source = plan.node(source.node).inputs.at(0);
        if (!kept.insert({source, dev}).second) continue;
        // An fp8 GEMM keeps its input as it cast it, in fp8, for the weight gradient.
        double bytes = static_cast<double>(shape.piece_bytes()) /
                       (runs_fp8_gemms(n, device) && size_of(shape.dtype) == 2 ? 2 : 1);
        // A cross-entropy over half logits keeps its fp32 softmax for the backward, not them.
        if (n.op.type == OpType::SoftmaxCrossEntropy && size_of(shape.dtype) == 2) bytes *= 2;
        acts[dev] += bytes;
        if (shape.piece_elements() == shape.num_elements()) whole[dev] += bytes;
        const TensorRef maker = made_by(plan, source);
        if (is_norm(plan.node(maker.node).op.type)) norm_outputs[dev] += bytes;
        if (moe.nodes.count(id) && !moe.before.count(maker.node)) moe_internals[dev] += bytes;
      }
      acts[dev] += attention_kept + experts.bytes;
      internals[dev] += probabilities;
      act_outputs[dev] += experts.act_output;
      moe_internals[dev] += experts.bytes;
    }
  }
  const auto busiest = std::max_element(acts.begin(), acts.end()) - acts.begin();
  p.activations = acts[busiest];
  p.whole_activations = whole[busiest];
  p.attention_internals = internals[busiest];
  p.norm_outputs = norm_outputs[busiest];
  p.expert_act_outputs = act_outputs[busiest];
  p.moe_internals = moe_internals[busiest];
  const auto fullest = std::max_element(params.begin(), params.end()) - params.begin();
  p.parameters = params[fullest];
  p.fp8_parameters = fp8_params[fullest];
  p.dense_weights = std::move(dense_weights[fullest]);
  for (const auto& [id, n] : plan.nodes()) {
    if (n.op.type != OpType::Input || n.outputs.empty()) continue;
    // The activation entering the segment is the floating input read by a placed operator.
    if (is_floating(n.outputs[0].dtype))
      p.input_bytes = std::max(p.input_bytes, static_cast<double>(n.outputs[0].bytes()));
  }
  return p;
}

}  // namespace unity
