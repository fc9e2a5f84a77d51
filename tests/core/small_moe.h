#pragma once
// The small mixture-of-experts decoder the expert-parallelism tests plan by hand, and its fixed
// pipeline layout.
#include "unity/core/pipeline/pipeline_planner.h"
#include "unity/core/zoo/transformer_models.h"

namespace unity::testing {

// A 4-layer decoder whose every MLP is 16 experts of 256 (SwiGLU), top 2, batch 32 of 128 tokens.
inline Graph small_moe() {
  zoo::TransformerSizes z{4, 256, 4, 4, 512, 128, 1024};
  z.experts = 16;
  z.experts_per_token = 2;
  z.expert_ffn = 256;
  z.normalize_top_k = true;
  return zoo::build_llama(32, z, DataType::BFloat16);
}

// One of the graph's Experts operators (-1 where it has none).
inline NodeId an_experts_node(const Graph& g) {
  NodeId experts = -1;
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == OpType::Experts) experts = id;
  return experts;
}

// tp 1, 2 stages of 2 micro-batches, no recomputation or overlap of the dense layers' traffic,
// ZeRO `zero`, the experts over `ep` devices of each stage reached by `dispatcher`.
inline PipelineOptions small_moe_layout(int ep, TokenDispatcher dispatcher, int zero,
                                        bool overlap = false) {
  PipelineOptions o;
  o.request.tensor_parallel = 1;
  o.request.pipeline_stages = 2;
  o.request.micro_batches = 2;
  o.request.interleave = 1;
  o.request.recompute = Recompute::None;
  o.request.zero_stage = zero;
  o.request.sequence_parallel = false;
  o.request.overlap_grad_reduce = false;
  o.request.tp_comm_overlap = false;
  o.request.expert_parallel = ep;
  o.request.dispatcher = dispatcher;
  o.request.ep_comm_overlap = overlap;
  return o;
}

}  // namespace unity::testing
