#include "pipeline_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "table_printer.h"

namespace unity::cli {
namespace {

std::string layers(const StagePlan& c) {
  return c.first_layer == c.last_layer ? std::to_string(c.first_layer)
                                       : fmt::format("{}-{}", c.first_layer, c.last_layer);
}

}  // namespace

void print_pipeline(const PipelinePlan& p, bool costs, bool causal_attention) {
  fmt::print("layout      tp {}{} x pp {} x dp {} ({} stage replicas of {} devices), {} dtype\n",
             p.tensor_parallel,
             p.context_parallel > 1 ? fmt::format(" x cp {}", p.context_parallel) : std::string(),
             p.pipeline_stages, p.data_parallel, p.pipeline_stages * p.data_parallel,
             p.tensor_parallel * p.context_parallel, to_string(p.dtype));
  fmt::print("schedule    1F1B{}, {} micro-batch{} of {} sample{}, bubble {:.1f}% ({:.3f} ms)\n",
             p.interleave > 1 ? fmt::format(" interleaved ({} chunks per device)", p.interleave)
                              : std::string(),
             p.micro_batches, p.micro_batches == 1 ? "" : "es", p.micro_batch_size,
             p.micro_batch_size == 1 ? "" : "s", 100 * p.bubble_fraction, p.bubble_time * 1e3);
  fmt::print("savers      recomputation {}, ZeRO stage {}, sequence parallelism {}\n",
             describe_recompute(p.recompute, p.recompute_modules), p.zero_stage,
             p.sequence_parallel ? "on" : "off");
  fmt::print("overlap     data-parallel reduce and gather {}; tensor-parallel collectives {}\n",
             p.overlap_grad_reduce ? "behind the backward and forward passes" : "after the flush",
             p.tp_comm_overlap ? "pipelined with their GEMMs" : "between the GEMMs");
  const int etp = p.expert_tensor_parallel;
  if (p.expert_parallel > 1)
    fmt::print(
        "experts     ep {} (each device 1/{} of every MoE layer's experts{}), edp {}; {} "
        "dispatch{}, {:.3f} ms an iteration on the busiest rank, {} sent\n",
        p.expert_parallel, p.expert_parallel,
        etp > 1 ? fmt::format(", 1/{} of each one's FFN: etp {}, the slices exchanging the routed "
                              "tokens {:.3f} ms more an iteration",
                              etp, etp, p.expert_slice_time * 1e3)
                : std::string(),
        p.expert_data_parallel, to_string(p.token_dispatcher),
        p.ep_comm_overlap ? " behind another micro-batch's compute" : "", p.alltoall_time * 1e3,
        human_bytes(static_cast<std::int64_t>(p.alltoall_bytes)));
  else if (etp > 1)
    fmt::print(
        "experts     etp {} (each device 1/{} of every expert's FFN, as a dense MLP's), "
        "edp {}; no all-to-all\n",
        etp, etp, p.expert_data_parallel);
  if (p.expert_parallel > 1 && p.route_groups > 1)
    fmt::print(
        "            node-limited routing: a token's {} experts from its best {} of {} groups of "
        "{}\n",
        p.top_k, p.route_group_top_k, p.route_groups, p.experts / p.route_groups);
  if (!p.expert_load.balanced())
    fmt::print(
        "            {}\n",
        p.expert_load.dropless()
            ? fmt::format("dropless routing, the busiest device's experts at {:.2f}x an even share",
                          p.expert_load.imbalance)
            : fmt::format("capacity factor {:.2f}: each expert's tokens capped at {:.2f}x an even "
                          "share and padded to it, the rest dropped",
                          p.expert_load.capacity_factor, p.expert_load.capacity_factor));
  if (p.context_parallel > 1)
    fmt::print(
        "context     cp {}: each sequence over {} devices, keys and values {}, {:.3f} ms exposed "
        "an iteration on the busiest rank, {} sent\n",
        p.context_parallel, p.context_parallel,
        p.context_exchange == ContextExchange::Ring ? "ringed behind the attention (p2p)"
                                                    : "all-gathered before the attention",
        p.cp_time * 1e3, human_bytes(static_cast<std::int64_t>(p.cp_bytes)));
  fmt::print("time        pipeline {:.3f} ms, gradient sync {:.3f} ms, optimizer step {:.3f} ms\n",
             p.pipeline_time * 1e3, p.sync_time * 1e3, p.update_time * 1e3);
  // Where the exposed gradient sync comes from: the rank that exposes most, and the bucket no
  // overlap hides (its first weights', filled last by the backward pass).
  if (p.overlap_grad_reduce && !p.rank_sync_exposed.empty() &&
      p.rank_last_bucket.size() == p.rank_sync_exposed.size()) {
    const auto r = static_cast<std::size_t>(
        std::max_element(p.rank_sync_exposed.begin(), p.rank_sync_exposed.end()) -
        p.rank_sync_exposed.begin());
    if (p.rank_sync_total[r] > 0)
      fmt::print(
          "sync        rank {}: {:.3f} of {:.3f} ms exposed; its last gradient bucket (its first "
          "{} weights) is reduced once the backward pass ends and gathered before the forward "
          "begins\n",
          r, p.rank_sync_exposed[r] * 1e3, p.rank_sync_total[r] * 1e3,
          human_count(static_cast<std::int64_t>(p.rank_last_bucket[r])));
  }
  fmt::print("throughput  {:.1f} TFLOP/s per device ({:.3g} FLOPs per iteration{})\n\n",
             p.tflops_per_device, p.model_flops,
             causal_attention ? fmt::format(", {}", flop_count_description(p.flop_count)) : "");
  if (!costs) return;
  Table stages({"chunk", "rank", "layers", "from", "to", "forward ms", "backward ms", "p2p ms",
                "parameters"});
  for (std::size_t c = 0; c < p.chunks.size(); ++c) {
    const auto& k = p.chunks[c];
    stages.add({std::to_string(c), std::to_string(k.rank), layers(k), k.first_node, k.last_node,
                fmt::format("{:.3f}", k.forward * 1e3), fmt::format("{:.3f}", k.backward * 1e3),
                fmt::format("{:.3f}", k.p2p * 1e3),
                human_count(static_cast<std::int64_t>(k.parameters))});
  }
  stages.print();
  fmt::print("\nmemory per device by pipeline rank\n");
  Table memory({"rank", "weights", "gradients", "optimizer", "activations", "workspace", "total"});
  auto bytes = [](double b) { return human_bytes(static_cast<std::int64_t>(b)); };
  for (std::size_t r = 0; r < p.rank_memory.size(); ++r) {
    const auto& m = p.rank_memory[r];
    memory.add({std::to_string(r), bytes(m.weights), bytes(m.gradients), bytes(m.optimizer),
                bytes(m.activations), bytes(m.workspace), bytes(m.total())});
  }
  memory.print();
  for (const auto& s : p.segment_plans) fmt::print("  {}\n", s);
  fmt::print("\n");
}

}  // namespace unity::cli
