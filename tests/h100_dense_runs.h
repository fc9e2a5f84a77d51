#pragma once
// Published dense-transformer runs on H100 (../shared/reference/h100-dense-runs.md), section 1:
// Megatron-LM's weak-scaling runs (Megatron-Core r0.8.0, GPT, vocabulary 131,072, sequence 4,096,
// bf16). Each is planned with its published layout fixed: its TP, PP and DP, and the stack it
// names: the gradient reduce and the weight gather overlapped (--overlap-grad-reduce
// --overlap-param-gather, which is the distributed optimizer: ZeRO 1), tensor-parallel
// communication overlapped with the GEMMs (--tp-comm-overlap, which needs sequence parallelism),
// fused attention (Transformer Engine's). The micro-batch, interleaving and recomputation are not
// published: the planner chooses them. The machine is the dgx-h100 preset with a non-blocking
// fabric (NVIDIA's runs, like Selene's, on a full fat tree), as many nodes as the run has.
#include <string>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/plan/plan_optimizer.h"

namespace unity::h100 {

struct DenseRun {
  const char* name;  // the published model size
  std::int64_t heads, hidden, layers;
  int tp, pp, gpus;
  std::int64_t batch;
  double published;  // TFLOP/s per GPU
};

inline constexpr DenseRun kMegatronWeakScaling[] = {
    {"1.7B", 16, 2048, 24, 1, 1, 48, 192, 408.8},
    {"7.1B", 32, 4096, 30, 2, 1, 96, 192, 465.9},
    {"16B", 48, 6144, 32, 4, 1, 192, 192, 489.1},
    {"32B", 56, 7168, 48, 8, 1, 384, 192, 459.6},
    {"70B", 64, 8192, 84, 8, 2, 768, 384, 419.7},
    {"119B", 80, 10240, 92, 8, 4, 1536, 768, 420.5},
    {"177B", 96, 12288, 96, 8, 6, 2304, 1152, 432.8},
    {"314B", 128, 16384, 96, 8, 8, 3072, 1536, 474.4},
    {"462B", 144, 18432, 112, 8, 16, 6144, 3072, 459.9},
};

// dgx-h100 nodes on a non-blocking fabric: every GPU keeps its 400 Gb/s NIC to any other node.
inline MachineSpec nonblocking_h100(int gpus) {
  MachineSpec m = load_machine("dgx-h100");
  m.name = "dgx-h100 (non-blocking)";
  m.nodes_per_pod = 0;
  m.max_nodes = std::max(m.max_nodes, gpus / m.devices_per_node);
  return select_machine(m, {0, gpus});
}

inline Graph model_of(const DenseRun& run) {
  zoo::TransformerResize resize;
  resize.layers = run.layers;
  resize.hidden = run.hidden;
  resize.heads = run.heads;
  resize.seq = 4096;
  resize.vocab = 131072;
  Graph g = load_model_for_devices("gpt-1.7b", run.gpus, run.batch, resize);
  set_compute_dtype(g, DataType::BFloat16);
  return g;
}

// A published TP x PP layout on the stack of these runs: `unity optimize --mode expert --tp T
// --pp P --zero 1 --overlap-grad-reduce --tp-comm-overlap --sequence-parallel --recompute none
// --pin fuse_attention` (no sequence parallelism, so no TP overlap, at TP 1).
inline OptimizeOptions megatron_core_layout(int tp, int pp) {
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = tp;
  o.layout.pipeline_stages = pp;
  o.layout.zero_stage = 1;
  o.layout.overlap_grad_reduce = true;
  o.layout.recompute = Recompute::None;
  if (tp > 1) {
    o.layout.sequence_parallel = true;
    o.layout.tp_comm_overlap = true;
  }
  o.pins = {"fuse_attention"};
  return o;
}

inline OptimizeOptions layout_of(const DenseRun& run) {
  return megatron_core_layout(run.tp, run.pp);
}

// Llama 3 405B's pre-training (section 2 of the reference, the Llama 3 paper's Table 4), the rows
// without context parallelism: 2,048 sequences of 8,192 tokens on dgx-h100 (the Llama 3 cluster
// itself: pods of 3,072 GPUs, 1:7 above).
struct Llama3Run {
  int gpus;
  double published;  // TFLOP/s per GPU
};
inline constexpr Llama3Run kLlama3Pretraining[] = {{8192, 430.0}, {16384, 400.0}};

// The published layout: TP 8, PP 16; FSDP that shards gradients and optimizer state and keeps the
// weights gathered between the passes, which holds and sends what ZeRO 2 does (fp32 gradients
// reduce-scattered every micro-batch, behind the next one's compute); no recomputation; the
// devices ordered TP, PP, DP inner to outer. Interleaving and micro-batches are not published:
// the planner chooses them. Not published either, and taken as in Megatron-Core's stack above:
// sequence parallelism (without it, or recomputation, 8K-token micro-batches do not fit) and the
// tensor-parallel overlap.
//
// The paper does not say how its TFLOP/s count a causal attention; Meta's torchtitan counts it in
// full ("we follow the convention and do not account for sparsity in causal attention"), and so
// do these rows (flop_count.h; docs/accuracy.md gives the causal count beside).
inline OptimizeOptions llama3_layout() {
  OptimizeOptions o = megatron_core_layout(8, 16);
  o.layout.zero_stage = 2;
  o.layout.device_order = DeviceOrder::DataParallelOutermost;
  return o;
}

// The long-context row of Table 4: 16,384 GPUs, 128 sequences of 131,072 tokens (16M tokens), TP
// 8, CP 16, PP 16, DP 8; the keys and values all-gathered (not a ring), the sequence dealt out
// in 2 x CP chunks; the devices ordered TP, CP, PP, DP inner to outer.
inline constexpr int kLlama3LongContextGpus = 16384;
inline constexpr std::int64_t kLlama3LongContextSequence = 131072;
inline constexpr double kLlama3LongContextPublished = 380.0;  // TFLOP/s per GPU

inline OptimizeOptions llama3_long_context_layout() {
  OptimizeOptions o = llama3_layout();
  o.layout.context_parallel = 16;
  o.layout.context_exchange = ContextExchange::AllGather;
  return o;
}

inline Graph llama3_long_context_model() {
  zoo::TransformerResize resize;
  resize.seq = kLlama3LongContextSequence;
  return load_model_for_devices("llama3-405b", kLlama3LongContextGpus,
                                16 * 1024 * 1024 / kLlama3LongContextSequence, resize);
}

inline Graph llama3_model(const Llama3Run& run) {
  return load_model_for_devices("llama3-405b", run.gpus, 2048);
}

inline MachineSpec llama3_cluster(const Llama3Run& run) {
  return load_machine("dgx-h100", {0, run.gpus});
}

// Megatron-LM's FP8 run of Llama 3 70B (section 3 of the reference, examples/llama, Megatron-Core
// 0.12), the one without context parallelism: 64 H100s, 128 sequences of 8,192 tokens in
// micro-batches of one, TP 4, PP 8, 5 virtual stages, FP8 GEMMs (Transformer Engine).
inline constexpr double kFp8Llama70bPublished = 780.0;  // TFLOP/s per GPU

// The FP8 recipe of Megatron-LM's script for these runs (examples/llama/
// train_llama3_8b_h100_fp8.sh, "following NeMo's performance scripts"): the weights of fp8 GEMMs
// held in fp8 (--fp8-param-gather) and the gradients reduced in bf16 (--grad-reduce-in-bf16).
inline void fp8_recipe(OptimizeOptions& o) {
  o.layout.fp8_param_gather = true;
  o.layout.grad_reduce_in_bf16 = true;
}

// Its layout on Megatron-Core's stack (as megatron_core_layout) with that recipe; recomputation
// is not published and none is taken, as for the weak-scaling runs.
inline OptimizeOptions fp8_llama70b_layout() {
  OptimizeOptions o = megatron_core_layout(4, 8);
  fp8_recipe(o);
  o.layout.interleave = 5;
  o.layout.micro_batches = 64;
  return o;
}

inline Graph fp8_llama70b_model() {
  Graph g = load_model_for_devices("llama3-70b", 64, 128);
  set_fp8_gemms(g);
  return g;
}

// Megatron-LM's FP8 runs with context parallelism (section 3 of the reference): Llama 3 8B on 8
// H100s (TP 1, PP 1, CP 2: 4 copies) and Llama 3 405B on 1,024 (TP 8, PP 8, CP 2, 8 virtual
// stages: 8 copies), sequences of 8,192 tokens in micro-batches of one. The keys and values pass
// around a ring (Megatron-Core's default --cp-comm-type p2p).
struct Fp8ContextRun {
  const char* model;
  int gpus;
  std::int64_t batch;
  int tp, pp, cp, interleave;
  double published;  // TFLOP/s per GPU
};
inline constexpr Fp8ContextRun kFp8ContextRuns[] = {{"llama3-8b", 8, 128, 1, 1, 2, 1, 800.0},
                                                    {"llama3-405b", 1024, 512, 8, 8, 2, 8, 834.0}};

inline OptimizeOptions fp8_context_layout(const Fp8ContextRun& run) {
  OptimizeOptions o = megatron_core_layout(run.tp, run.pp);
  fp8_recipe(o);
  o.layout.context_parallel = run.cp;
  o.layout.context_exchange = ContextExchange::Ring;
  o.layout.interleave = run.interleave;
  o.layout.micro_batches = static_cast<int>(run.batch / (run.gpus / (run.tp * run.pp * run.cp)));
  return o;
}

inline Graph fp8_context_model(const Fp8ContextRun& run) {
  Graph g = load_model_for_devices(run.model, run.gpus, run.batch);
  set_fp8_gemms(g);
  return g;
}

}  // namespace unity::h100
