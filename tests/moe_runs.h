#pragma once
// Published mixture-of-experts runs (shared/reference/moe-runs.md) and their layouts as Unity
// plans them, shared by the MoeRuns tests and unity_bench_moe_runs.
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/plan/plan_optimizer.h"

namespace unity::moe {

// Qwen3-235B-A22B on 256 H100 (NVIDIA's Megatron-MoE model zoo): TP 2, EP 32 (cross-node,
// DeepEP), PP 8 with 4 virtual stages, DP 16, micro-batch 1, global batch 2,048 of 4,096 tokens,
// on Megatron-Core's stack (sequence parallelism, TP overlap, the distributed optimizer with its
// overlapped reduce, fused attention) and its "norm, act" recomputation (Megatron-Core's
// --recompute-modules layernorm moe_act).
inline OptimizeOptions qwen3_layout(bool overlapped) {
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 2;
  o.layout.pipeline_stages = 8;
  o.layout.interleave = 4;
  o.layout.micro_batches = 128;
  o.layout.expert_parallel = 32;
  o.layout.dispatcher = TokenDispatcher::DeepEp;
  o.layout.zero_stage = 1;
  o.layout.overlap_grad_reduce = true;
  o.layout.recompute = Recompute::Selective;
  o.layout.recompute_modules.bits = RecomputeModules::kLayerNorm | RecomputeModules::kMoeActivation;
  o.layout.sequence_parallel = true;
  o.layout.tp_comm_overlap = true;
  o.pins = {"fuse_attention"};
  o.layout.ep_comm_overlap = overlapped;
  return o;
}

// Its intra-node row: TP 2, EP 8 inside a node (the all-to-all dispatcher), PP 32 with 3 virtual
// stages, DP 4, 512 micro-batches of 1; the 94 layers with the embedding and the loss counted as
// one more each make 96 chunks of one. Published: 24.2 s a step.
inline OptimizeOptions qwen3_intra_node_layout() {
  OptimizeOptions o = qwen3_layout(false);
  o.layout.pipeline_stages = 32;
  o.layout.interleave = 3;
  o.layout.micro_batches = 512;
  o.layout.expert_parallel = 8;
  o.layout.dispatcher = TokenDispatcher::AllToAll;
  o.layout.embedding_in_split = true;
  o.layout.loss_in_split = true;
  return o;
}

inline Graph qwen3_model() { return load_model_for_devices("qwen3-235b-a22b", 256, 2048); }

// DeepSeek-V3 on 1,024 H100 (NeMo's performance summary): TP 2, PP 8 with 4 virtual stages, EP
// 64, FP8, micro-batch 1, 8,192 sequences of 4,096 tokens, on the same stack with the latent
// attention fused too (recomputation not stated, none taken). Published: 1,297 tokens a second
// per GPU.
inline constexpr double kDeepSeekV3TokensPerGpu = 1297;

inline OptimizeOptions deepseek_v3_layout() {
  OptimizeOptions o = qwen3_layout(false);
  o.layout.recompute = Recompute::None;
  o.layout.recompute_modules = {};
  o.layout.expert_parallel = 64;
  o.pins = {"fuse_attention", "fuse_latent_attention"};
  return o;
}

inline Graph deepseek_v3_model() {
  Graph g = load_model_for_devices("deepseek-v3", 1024, 8192);
  set_fp8_gemms(g);
  return g;
}

// Other published MoE runs on H100, used to check the work (docs/large-models.md, "Other
// published MoE runs"), none of them behind a constant.
//
// Qwen3-235B-A22B's long-context runs (the model zoo, forced balance): 256 H100, TP 4, PP 8 with
// 4 virtual stages, EP 8 (DeepEP), CP 1-8 at 16K-128K tokens, 256 sequences a step, recomputing
// "layernorm moe"; published in TFLOP/s of Megatron's causal count without the recomputation.
struct LongContextRun {
  int cp;
  double published_tflops;
};
inline constexpr LongContextRun kQwen3LongContext[] = {{1, 295}, {2, 335}, {4, 368}, {8, 389}};

inline Graph qwen3_long_context_model(int cp) {
  zoo::TransformerResize sizes;
  sizes.seq = 16384 * cp;
  return load_model_for_devices("qwen3-235b-a22b", 256, 256, sizes);
}

inline OptimizeOptions qwen3_long_context_layout(int cp) {
  OptimizeOptions o = qwen3_layout(false);
  o.layout.tensor_parallel = 4;
  o.layout.context_parallel = cp;
  o.layout.expert_parallel = 8;
  o.layout.micro_batches = 256 / (8 / cp);
  o.layout.recompute_modules.bits = RecomputeModules::kLayerNorm | RecomputeModules::kMoe;
  o.flop_count = FlopCount::Causal;
  return o;
}

// The model zoo's two other intra-node layouts of Qwen3-235B-A22B (step seconds): TP 4, EP 8,
// PP 8 with 4 virtual stages, EDP 4, DeepEP, no recomputation: 29.0 s; TP 2, EP 8, EDP 32 with
// Megatron's FSDP (ZeRO-3), 4 micro-batches of 4, full recomputation: 17.6 s.
inline OptimizeOptions qwen3_tp4_intra_node_layout() {
  OptimizeOptions o = qwen3_layout(false);
  o.layout.tensor_parallel = 4;
  o.layout.expert_parallel = 8;
  o.layout.micro_batches = 256;
  o.layout.recompute = Recompute::None;
  o.layout.recompute_modules = {};
  return o;
}

inline OptimizeOptions qwen3_fsdp_layout() {
  OptimizeOptions o = qwen3_layout(false);
  o.layout.pipeline_stages = 1;
  o.layout.interleave = 1;
  o.layout.micro_batches = 4;
  o.layout.expert_parallel = 8;
  o.layout.zero_stage = 3;
  o.layout.recompute = Recompute::Full;
  o.layout.recompute_modules = {};
  return o;
}

// Mixtral 8x7B on 64 H100 (Megatron-Core v0.9's MoE README, 468 TFLOP/s in its full count): TP
// 1, EP 8, PP 4 with 8 virtual stages, the all-to-all dispatcher, 256 sequences of 4,096.
inline constexpr double kMixtralTflops = 468;

inline OptimizeOptions mixtral_layout() {
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 1;
  o.layout.pipeline_stages = 4;
  o.layout.interleave = 8;
  o.layout.micro_batches = 16;
  o.layout.expert_parallel = 8;
  o.layout.dispatcher = TokenDispatcher::AllToAll;
  o.layout.zero_stage = 1;
  o.layout.overlap_grad_reduce = true;
  o.layout.recompute = Recompute::None;
  o.pins = {"fuse_attention"};
  return o;
}

// The model zoo's runs on GB200 NVL72 racks (256 GPUs, 64 trays of 4; HybridEP, Megatron's
// DeepEP-like dispatcher for NVLink domains beyond 8 GPUs, costed as DeepEP; forced balance; CUDA
// graphs of the attention, router and dispatch preprocessing), published in TFLOP/s of Megatron's
// causal count:
// - Qwen3-235B-A22B in bf16 (best_practice/qwen3): TP 1, PP 8, EP 8, 8,192 sequences in
//   micro-batches of one, no recomputation: 750;
// - DeepSeek-V3 in MXFP8 (Megatron-LM's "Optimizing DeepSeek-V3 Training Performance on NVIDIA
//   GB200 NVL72", its last configuration): TP 1, PP 8 with 4 virtual stages, EP 32, 2,048
//   sequences in micro-batches of one, fp8 weights gathered, recomputing the experts' activation:
//   970 (its one multi-token-prediction layer, which Unity's model has not, is in the FLOPs and
//   the time alike).
inline constexpr double kQwen3Gb200Tflops = 750;
inline constexpr double kDeepSeekV3Gb200Tflops = 970;

inline OptimizeOptions gb200_layout() {
  OptimizeOptions o = qwen3_layout(false);
  o.layout.tensor_parallel = 1;
  o.layout.sequence_parallel = false;
  o.layout.tp_comm_overlap = false;
  o.layout.pipeline_stages = 8;
  o.layout.recompute = Recompute::None;
  o.layout.recompute_modules = {};
  o.layout.embedding_in_split = true;
  o.layout.loss_in_split = true;
  o.flop_count = FlopCount::Causal;
  return o;
}

inline OptimizeOptions qwen3_gb200_layout() {
  OptimizeOptions o = gb200_layout();
  o.layout.interleave = 1;
  o.layout.micro_batches = 256;
  o.layout.expert_parallel = 8;
  return o;
}

inline OptimizeOptions deepseek_v3_gb200_layout() {
  OptimizeOptions o = gb200_layout();
  o.layout.interleave = 4;
  o.layout.micro_batches = 64;
  o.layout.expert_parallel = 32;
  o.layout.recompute = Recompute::Selective;
  o.layout.recompute_modules.bits = RecomputeModules::kMoeActivation;
  o.layout.fp8_param_gather = true;
  o.pins = {"fuse_attention", "fuse_latent_attention"};
  return o;
}

inline Graph qwen3_gb200_model() { return load_model_for_devices("qwen3-235b-a22b", 256, 8192); }

inline Graph deepseek_v3_gb200_model() {
  Graph g = load_model_for_devices("deepseek-v3", 256, 2048);
  set_fp8_gemms(g);
  return g;
}

}  // namespace unity::moe
