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

}  // namespace unity::h100
