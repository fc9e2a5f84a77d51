// A plan's launch description (launch_spec.h). Three kinds of plan are Megatron-style layouts:
// a pipeline layout whose segments are planned as Megatron-LM splits a layer (or left whole at
// tp 1), data parallelism over every device, and the expert mode's whole-graph "megatron tpT x
// dpD". Anything else the joint search found is a partition per operator, which the frameworks'
// launchers do not take.
#include "unity/core/launch/launch_spec.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <vector>

#include <fmt/format.h>

namespace unity::launch {
namespace {

std::string dtype_name(const std::string& summary_dtype) {
  if (summary_dtype == "bfloat16") return "bf16";
  if (summary_dtype == "float16") return "fp16";
  if (summary_dtype == "fp8") return "fp8";
  return "fp32";
}

// "megatron tp8" or "serial": how the pipeline planner names Megatron-LM's split of a segment.
bool is_megatron_segment_plan(const std::string& description) {
  const auto colon = description.rfind(": ");
  const std::string how = colon == std::string::npos ? description : description.substr(colon + 2);
  return how == "serial" || how.rfind("megatron tp", 0) == 0;
}

// The whole-graph strategies that are Megatron-style: "data-parallel xN" over every device and
// "megatron tpT x dpD" (the expert mode's, or the joint search's baseline). Sets tp and dp.
bool whole_graph_layout(const std::string& origin, int devices, int& tp, int& dp) {
  std::string o = origin;
  if (o.rfind("expert: ", 0) == 0) o = o.substr(8);
  int t = 0, d = 0;
  if (std::sscanf(o.c_str(), "megatron tp%d x dp%d", &t, &d) == 2 && t * d == devices) {
    tp = t;
    dp = d;
    return true;
  }
  if (std::sscanf(o.c_str(), "data-parallel x%d", &d) == 1 && d == devices) {
    tp = 1;
    dp = d;
    return true;
  }
  return false;
}

}  // namespace

std::vector<int> LaunchSpec::stage_layers() const {
  std::vector<int> out(static_cast<std::size_t>(pp), 0);
  for (std::size_t c = 0; c < chunk_layers.size(); ++c)
    out[c % static_cast<std::size_t>(pp)] += chunk_layers[c];
  return out;
}

std::string LaunchSpec::describe() const {
  std::string text = fmt::format("tp{} pp{} dp{}", tp, pp, dp);
  if (cp > 1) text += fmt::format(" cp{} ({})", cp, to_string(cp_exchange));
  if (interleave > 1) text += fmt::format(" v{}", interleave);
  if (model.moe) {
    text += fmt::format(", experts ep{} etp{} edp{} ({})", ep, etp, edp, to_string(dispatcher));
    if (ep_comm_overlap) text += " overlapped";
  }
  text += fmt::format(", micro-batch {} x {}, global batch {}", micro_batch_size, micro_batches,
                      global_batch);
  text += fmt::format(", recompute {}", describe_recompute(recompute, recompute_modules));
  if (zero_stage > 0) text += fmt::format(", ZeRO-{}", zero_stage);
  if (sequence_parallel) text += ", sequence-parallel";
  if (tp_comm_overlap) text += ", TP overlap";
  if (overlap_grad_reduce && dp > 1) text += ", overlapped grad reduce";
  text += ", " + dtype;
  return text;
}

std::optional<ModelShape> plan_model_shape(const Plan& plan, std::string* why) {
  if (plan.summary.model_shape) return plan.summary.model_shape;
  return model_shape_of(plan.pcg, why);
}

Derivation launch_spec_of(const Plan& plan) {
  Derivation out;
  std::string why;
  const auto shape = plan_model_shape(plan, &why);
  if (!shape)
    out.inexpressible.push_back(
        fmt::format("'{}' is not a decoder-only transformer ({}): Megatron-LM, torchtitan and "
                    "DeepSpeed's launchers train GPT and Llama-style decoders",
                    plan.summary.model, why));
  LaunchSpec s;
  if (shape) s.model = *shape;
  s.model_name = plan.summary.model;
  s.machine = plan.summary.machine;
  s.devices = plan.summary.devices;
  s.devices_per_node = std::max(1, plan.machine.devices_per_node);
  s.dtype = dtype_name(plan.summary.dtype);
  s.optimizer = plan.summary.optimizer;
  s.iteration_ms = plan.summary.iteration_time_ms;
  s.origin = plan.summary.origin.empty() ? plan.summary.mode : plan.summary.origin;
  s.global_batch = plan.pcg.batch_size;
  if (const auto& p = plan.pipeline) {
    s.tp = p->tensor_parallel;
    s.pp = p->pipeline_stages;
    s.dp = p->data_parallel;
    s.cp = p->context_parallel;
    s.cp_exchange = p->context_exchange;
    s.interleave = p->interleave;
    s.sequence_parallel = p->sequence_parallel;
    s.tp_comm_overlap = p->tp_comm_overlap;
    s.overlap_grad_reduce = p->overlap_grad_reduce;
    s.zero_stage = p->zero_stage;
    s.recompute = p->recompute;
    s.recompute_modules = p->recompute_modules;
    s.micro_batch_size = p->micro_batch_size;
    s.micro_batches = p->micro_batches;
    s.device_order = p->device_order;
    s.grad_reduce_in_bf16 = p->grad_reduce_in_bf16;
    s.fp8_param_gather = p->fp8_param_gather;
    if (shape && shape->moe) {
      const PipelinePlan::ExpertGrid g = p->expert_grid();
      s.ep = g.ep;
      s.etp = g.etp;
      s.edp = g.edp;
      s.dispatcher = p->token_dispatcher;
      s.ep_comm_overlap = p->ep_comm_overlap;
      s.expert_load = p->expert_load;
    }
    for (const auto& d : p->segment_plans)
      if (!is_megatron_segment_plan(d))
        out.inexpressible.push_back(fmt::format(
            "the joint search split {} its own way, not as Megatron-LM splits a layer (a "
            "per-operator partition no framework's launcher takes)",
            d.substr(0, d.rfind(": "))));
    // Stages cut between layers: no layer in two chunks, every chunk with a layer, but for the
    // embedding's and the loss's own chunks where the plan counted them as layers (Megatron's
    // --account-for-embedding/loss-in-pipeline-split; the layout string writes them as E and L).
    const std::size_t chunks = p->chunks.size();
    const bool embedding_alone =
        p->embedding_in_split && chunks > 1 && p->chunks[0].last_layer == p->chunks[1].first_layer;
    const bool loss_alone = p->loss_in_split && chunks > 1 &&
                            p->chunks[chunks - 1].first_layer == p->chunks[chunks - 2].last_layer;
    // One reason for every cut inside a layer, the first named (a 126-layer plan may have 41).
    std::string first_inside;
    std::size_t inside = 0;
    for (std::size_t c = 0; c < chunks; ++c) {
      const StagePlan& chunk = p->chunks[c];
      if ((c == 0 && embedding_alone) || (c + 1 == chunks && loss_alone)) {
        s.chunk_layers.push_back(0);
        continue;
      }
      if (c + 1 < chunks && !(c + 2 == chunks && loss_alone) &&
          chunk.last_layer >= p->chunks[c + 1].first_layer) {
        if (inside++ == 0)
          first_inside = fmt::format(
              "model chunk {} ends inside layer {} (after '{}'), which chunk {} continues", c,
              chunk.last_layer, chunk.last_node, c + 1);
      }
      s.chunk_layers.push_back(chunk.last_layer - chunk.first_layer + 1);
    }
    if (inside > 0)
      out.inexpressible.push_back(fmt::format(
          "{}{}: frameworks cut pipeline stages between whole layers", first_inside,
          inside == 1 ? ""
                      : fmt::format(", and {} more of the plan's {} chunks end inside a layer",
                                    inside - 1, chunks)));
    if (shape && out.inexpressible.empty() &&
        std::accumulate(s.chunk_layers.begin(), s.chunk_layers.end(), 0) != shape->layers)
      out.inexpressible.push_back(fmt::format(
          "the plan's stages hold {} layers, the model {}",
          std::accumulate(s.chunk_layers.begin(), s.chunk_layers.end(), 0), shape->layers));
  } else if (whole_graph_layout(plan.summary.mode == "data-parallel"
                                    ? fmt::format("data-parallel x{}", plan.summary.devices)
                                    : plan.summary.origin,
                                plan.summary.devices, s.tp, s.dp)) {
    s.micro_batch_size = s.global_batch / std::max(s.dp, 1);
    if (shape) s.chunk_layers = {static_cast<int>(shape->layers)};
    if (shape && shape->moe) {  // the experts split over each TP group (ETP 1)
      s.ep = s.tp;
      s.edp = s.dp;
    }
  } else {
    out.inexpressible.push_back(fmt::format(
        "the plan is a per-operator partition ({}{}), not a Megatron-style layout of tensor, "
        "pipeline and data parallelism",
        plan.summary.origin.empty() ? plan.summary.mode : plan.summary.origin,
        plan.summary.substitutions_applied.empty()
            ? std::string()
            : fmt::format(", {} substitutions", plan.summary.substitutions_applied.size())));
  }
  if (out.inexpressible.empty()) out.spec = std::move(s);
  return out;
}

}  // namespace unity::launch
