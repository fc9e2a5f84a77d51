// The export use case (export_launch.h): derive the launch, check the framework can run it,
// write it; with --nearest, re-plan the layouts nearest the plan with Megatron-LM's expert mode
// until one the framework can run turns up.
#include "unity/core/launch/export_launch.h"

#include <algorithm>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/launch/launch_limits.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/rules/rule.h"
#include "zoo/zoo_models.h"

namespace unity::launch {
namespace {

std::string reasons_text(const std::vector<std::string>& reasons) {
  return fmt::format("{}", fmt::join(reasons, "; "));
}

// The layouts to try, nearest first: the plan's own knobs, then with what the framework cannot
// run changed, then its TP and PP alone (interleaving searched, then none), then Megatron-LM's
// best layout of the model.
bool shape_has_experts(const Plan& plan) {
  const auto shape = plan_model_shape(plan);
  return shape && shape->moe;
}

// The algebraic rewrites the plan applied (fuse_attention: the frameworks' fused attention
// kernels), pinned in the re-plans: a nearby layout differs from the plan by its layout alone.
std::vector<std::string> algebraic_rewrites(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& a : plan.summary.substitutions_applied) {
    const Rule* rule = default_rules().find(a.rule);
    if (rule && rule->kind == RuleKind::Algebraic &&
        std::find(out.begin(), out.end(), a.rule) == out.end())
      out.push_back(a.rule);
  }
  return out;
}

std::vector<LayoutRequest> nearby_layouts(const Plan& plan, Framework framework) {
  LayoutRequest own;
  if (const auto& p = plan.pipeline) {
    own.tensor_parallel = p->tensor_parallel;
    own.pipeline_stages = p->pipeline_stages;
    own.micro_batches = p->micro_batches;
    own.interleave = p->interleave;
    own.recompute = p->recompute;
    own.recompute_modules = p->recompute_modules;
    own.zero_stage = p->zero_stage;
    own.sequence_parallel = p->sequence_parallel;
    own.overlap_grad_reduce = p->overlap_grad_reduce;
    own.tp_comm_overlap = p->tp_comm_overlap;
    own.device_order = p->device_order;
    own.context_parallel = p->context_parallel;
    if (p->context_parallel > 1) own.context_exchange = p->context_exchange;
  }
  if (const auto& p = plan.pipeline; p && shape_has_experts(plan)) {
    own.expert_parallel = p->expert_parallel;
    own.dispatcher = p->token_dispatcher;
    own.ep_comm_overlap = p->ep_comm_overlap;
    own.expert_load = p->expert_load;  // the workload's, kept by every nearby layout
  }
  // What each framework's limits change in a request (Megatron-LM: as many virtual stages as
  // divide each stage's layers, the all-to-all overlap only where Megatron-Core takes it;
  // DeepSpeed: no interleaving, ZeRO-1 at most with stages, no TP overlap, no context
  // parallelism, experts over data-parallel copies alone with its own all-to-all; torchtitan:
  // no stages for a model it does not pipeline).
  const auto shape = plan_model_shape(plan);
  const bool moe = shape && shape->moe;
  const auto fit = [&](LayoutRequest r) {
    r.expert_load = own.expert_load;
    // Megatron-Core's DeepEP (flex) dispatcher does not pad to a capacity.
    if (moe && framework == Framework::Megatron && !r.expert_load.dropless() &&
        r.dispatcher == TokenDispatcher::DeepEp)
      r.dispatcher = TokenDispatcher::AllToAll;
    if (moe && framework == Framework::Megatron && r.ep_comm_overlap.value_or(false) &&
        (r.recompute == Recompute::Full || r.expert_parallel == 1 ||
         (r.pipeline_stages > 1 && r.interleave == 1)))
      r.ep_comm_overlap = false;
    if (moe && framework == Framework::DeepSpeed) {
      r.tensor_parallel = 1;
      r.sequence_parallel.reset();
      r.dispatcher = TokenDispatcher::AllToAll;
      r.ep_comm_overlap = false;
      r.micro_batches = 0;
      if (r.zero_stage == 3) r.zero_stage = 2;
    }
    if (moe && framework == Framework::Torchtitan && !shape->mla) {
      r.pipeline_stages = 1;  // qwen3 and gpt_oss: no pipelining in torchtitan v0.2.2
      r.interleave = 1;
    }
    // Transformer Engine's context parallelism all-gathers the keys and values of a windowed
    // attention; it has no ring for it.
    if (framework == Framework::Megatron && shape && shape->windowed() && r.context_parallel > 1)
      r.context_exchange = ContextExchange::AllGather;
    if (framework == Framework::Megatron && shape && r.interleave > 1 && r.pipeline_stages > 0) {
      const std::int64_t per_stage =
          shape->layers % r.pipeline_stages == 0 ? shape->layers / r.pipeline_stages : 1;
      while (r.interleave > 1 && per_stage % r.interleave != 0) --r.interleave;
    }
    // Modules beyond the attention's are Megatron-Core's: the others recompute the whole layer
    // (the modules' memory saving, at a whole forward's time).
    if (framework != Framework::Megatron && r.recompute == Recompute::Selective &&
        !r.recompute_modules.is_default()) {
      r.recompute = Recompute::Full;
      r.recompute_modules = {};
    }
    if (framework == Framework::DeepSpeed) {
      r.interleave = 1;
      if (r.pipeline_stages != 1 && r.zero_stage > 1) r.zero_stage = 1;
      r.tp_comm_overlap = false;
      if (r.context_parallel > 1) {
        // No context parallelism: the sequence whole on each copy, twice the copies.
        r.context_parallel = 1;
        r.context_exchange.reset();
        r.micro_batches = 0;
      }
    }
    return r;
  };
  LayoutRequest grid;
  grid.expert_load = own.expert_load;
  grid.tensor_parallel = own.tensor_parallel;
  grid.pipeline_stages = own.pipeline_stages;
  grid.expert_parallel = own.expert_parallel;
  LayoutRequest plain = grid;  // the grid without interleaving, which every framework runs
  plain.interleave = plain.pipeline_stages > 0 ? 1 : 0;
  std::vector<LayoutRequest> out{own, fit(own), fit(grid), plain, fit(LayoutRequest{})};
  // Expert mode needs a layout to lay out; an empty request is its own search over them.
  std::vector<LayoutRequest> unique;
  for (const auto& r : out)
    if (std::none_of(unique.begin(), unique.end(),
                     [&](const LayoutRequest& u) { return u.describe() == r.describe(); }))
      unique.push_back(r);
  return unique;
}

}  // namespace

std::optional<Graph> serial_model_of(const Plan& plan) {
  if (plan.pipeline) return plan.pcg;
  const auto& shape = plan.summary.model_shape;
  if (!shape || plan.pcg.batch_size <= 0) return std::nullopt;
  const ModelShape& m = *shape;
  zoo::TransformerSizes z{m.layers, m.hidden, m.heads, m.kv_heads, m.ffn, m.seq, m.vocab};
  z.head_dim = m.head_dim * m.heads == m.hidden ? 0 : m.head_dim;
  z.tied = m.tied;
  z.positions = m.positions;
  z.attention_bias = m.attention_bias;
  z.layer_norm = !m.rms_norm;
  z.gated_mlp = m.gated_mlp;
  z.gelu = m.activation == "gelu";
  z.mlp_bias = m.mlp_bias;
  z.parallel_residual = m.parallel_residual;
  z.shared_parallel_norm = m.shared_parallel_norm;
  z.sandwich_norms = m.sandwich_norms;
  z.post_norms = m.post_norms;
  if (const auto& e = m.moe) {
    // Shared experts are built as shared_experts x expert_ffn wide.
    if (e->shared_ffn % e->expert_ffn != 0) return std::nullopt;
    z.experts = e->experts;
    z.experts_per_token = e->top_k;
    z.expert_ffn = e->expert_ffn;
    z.shared_experts = e->shared_ffn / e->expert_ffn;
    for (std::size_t i = 0; i < e->layers.size(); ++i)
      if (!e->layers[i]) z.dense_layers.push_back(static_cast<std::int64_t>(i));
    z.router_sigmoid = e->sigmoid;
    z.normalize_top_k = e->normalize_top_k;
    z.route_groups = e->route_groups;
    z.route_group_top_k = e->route_group_top_k;
    if (!e->gated) z.gelu = true;
  }
  if (const auto& a = m.mla) {
    z.q_lora = a->q_lora_rank;
    z.kv_lora = a->kv_lora_rank;
    z.qk_nope = a->qk_head_dim;
    z.qk_rope = a->qk_rope_head_dim;
    z.v_head_dim = a->v_head_dim;
  }
  Graph g;
  g.name = plan.summary.model;
  g.batch_size = plan.pcg.batch_size;
  GraphBuilder b(g);
  if (m.positions > 0)
    zoo::detail::build_gpt(b, g.batch_size, z);
  else
    zoo::detail::build_llama(b, g.batch_size, z, DataType::Float32);
  set_compute_dtype(g, compute_dtype(plan.pcg));
  if (has_fp8_gemms(plan.pcg)) set_fp8_gemms(g);
  return g;
}

ExportResult export_launch(const Plan& plan, const ExportRequest& request) {
  const Framework framework = request.framework;
  Derivation d = launch_spec_of(plan);
  std::vector<std::string> refused = d.inexpressible;
  if (d.spec) refused = cannot_run(*d.spec, framework);
  if (refused.empty()) {
    ExportResult out;
    out.file = write_launch(*d.spec, framework);
    out.spec = std::move(*d.spec);
    return out;
  }
  const std::string what =
      fmt::format("{} cannot run this plan: {}", display_name(framework), reasons_text(refused));
  // A split or cut no launcher takes is the joint search's own: `optimize --launchable` plans
  // without them.
  if (!request.nearest)
    throw InputError(what + fmt::format(" (nothing written; --nearest looks for the nearest layout "
                                        "it can run{})",
                                        d.inexpressible.empty()
                                            ? ""
                                            : ", and unity optimize --launchable plans only "
                                              "what a launcher takes"));
  const auto serial = serial_model_of(plan);
  if (!serial || !plan_model_shape(plan))
    throw InputError(what +
                     " (nothing written; --nearest has no layout to offer: the model is "
                     "not a decoder-only transformer)");
  std::vector<std::string> tried;
  for (const LayoutRequest& layout : nearby_layouts(plan, framework)) {
    OptimizeOptions options;
    options.mode = "expert";
    options.optimizer = plan.summary.optimizer;
    options.layout = layout;
    options.pins = algebraic_rewrites(plan);
    Plan nearest;
    try {
      // What the framework's launcher lacks, for this model too (launch_limits.h): what the
      // request leaves open is searched within it, what it fixes against it is refused.
      limit_to_launcher(options.layout, framework);
      nearest = optimize_plan(*serial, plan.machine, options);
    } catch (const InputError& e) {
      tried.push_back(
          fmt::format("{}: {}", layout.empty() ? "expert" : layout.describe(), e.what()));
      continue;
    }
    nearest.summary.model_shape = plan_model_shape(plan);
    Derivation nd = launch_spec_of(nearest);
    std::vector<std::string> why = nd.inexpressible;
    if (nd.spec) why = cannot_run(*nd.spec, framework);
    if (!why.empty()) {
      tried.push_back(
          fmt::format("{}: {}", layout.empty() ? "expert" : layout.describe(), reasons_text(why)));
      continue;
    }
    ExportResult out;
    out.file = write_launch(*nd.spec, framework);
    out.spec = std::move(*nd.spec);
    out.refused = std::move(refused);
    out.nearest = std::move(nearest);
    return out;
  }
  throw InputError(fmt::format("{} (nothing written; no nearby layout runs either: {})", what,
                               reasons_text(tried)));
}

}  // namespace unity::launch
