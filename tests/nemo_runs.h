#pragma once
// NVIDIA's published dense runs of Megatron-Bridge's performance summary, 25.11 NeMo container
// (docs/performance-summary.md of NVIDIA-NeMo/Megatron-Bridge): Llama 3 8B, 70B and 405B in fp8
// with current scaling on DGX-H100, DGX-B200 and GB200 NVL72, sequences of 8,192 tokens. These are
// runs that were not in ../shared/reference: they check the work, and the B200 record
// (published_accuracy.h) is theirs. Each is compared in tokens/s per GPU (the step time's inverse),
// which does not depend on how the FLOPs are counted.
#include "h100_dense_runs.h"

namespace unity::nemo {

// Every run's sequences are 8,192 tokens (the llama3 family's own length).
inline constexpr std::int64_t kSequence = 8192;

struct NemoRun {
  const char* machine;
  const char* model;
  int gpus;
  std::int64_t batch;
  int tp, pp, cp, interleave;
  bool fsdp;          // Megatron-FSDP: weights, gradients and optimizer state sharded (ZeRO 3)
  int micro_batches;  // global batch / (data-parallel size x micro-batch size)
  double published;   // tokens/s per GPU
};

// The summary's tables give the micro-batch size and the global batch; the micro-batch count
// follows from them.
inline constexpr NemoRun kNemoFp8Runs[] = {
    {"dgx-h100", "llama3-8b", 8, 128, 1, 1, 1, 1, true, 16, 14451},
    {"dgx-h100", "llama3-70b", 64, 128, 4, 8, 1, 5, false, 64, 1602},
    {"dgx-h100", "llama3-405b", 1024, 512, 8, 8, 2, 8, false, 64, 292},
    {"dgx-b200", "llama3-8b", 8, 128, 1, 1, 1, 1, false, 8, 30624},
    {"dgx-b200", "llama3-405b", 128, 64, 4, 8, 2, 8, false, 32, 661},
    {"gb200-nvl72", "llama3-8b", 8, 128, 1, 1, 1, 1, false, 8, 31508},
    {"gb200-nvl72", "llama3-405b", 256, 1536, 4, 16, 1, 4, false, 384, 813},
};

// Megatron-Core's stack as for the H100 runs (h100::megatron_core_layout) with the fp8 recipe of
// Megatron-LM's Llama 3 scripts; the keys and values ringed where CP > 1; FSDP as ZeRO 3 with its
// gathers behind the passes.
inline OptimizeOptions layout_of(const NemoRun& run) {
  OptimizeOptions o = h100::megatron_core_layout(run.tp, run.pp);
  h100::fp8_recipe(o);
  if (run.fsdp) o.layout.zero_stage = 3;
  if (run.cp > 1) {
    o.layout.context_parallel = run.cp;
    o.layout.context_exchange = ContextExchange::Ring;
  }
  o.layout.interleave = run.interleave;
  o.layout.micro_batches = run.micro_batches;
  return o;
}

inline Plan plan_of(const NemoRun& run) {
  Graph g = load_model_for_devices(run.model, run.gpus, run.batch);
  set_fp8_gemms(g);
  return optimize_plan(g, load_machine(run.machine, {0, run.gpus}), layout_of(run));
}

// Predicted tokens/s per GPU: the iteration's sequences of kSequence tokens over its time.
inline double tokens_per_second(const NemoRun& run, const Plan& plan) {
  const double tokens = static_cast<double>(run.batch * kSequence);
  return tokens / run.gpus / (plan.summary.iteration_time_ms / 1e3);
}

}  // namespace unity::nemo
