// Published H100 runs (shared/reference/h100-dense-runs.md) planned with their published layouts:
// Megatron-LM's weak-scaling table with the micro-batch the planner picks and with micro-batches
// of one sequence, Llama 3 405B's first two rows of Table 4, and Megatron-LM's FP8 Llama 3 runs
// with and without context parallelism.
//   build/tests/bench/unity_bench_h100_runs
#include <string>

#include <fmt/format.h>

#include "../h100_dense_runs.h"

using namespace unity;

namespace {

std::string layout(const PipelinePlan& l) {
  std::string text = fmt::format("tp{} pp{} dp{} m{}x{}", l.tensor_parallel, l.pipeline_stages,
                                 l.data_parallel, l.micro_batches, l.micro_batch_size);
  if (l.interleave > 1) text += fmt::format(" v{}", l.interleave);
  text += fmt::format(" {}", to_string(l.recompute));
  if (l.zero_stage) text += fmt::format(" zero{}", l.zero_stage);
  if (l.sequence_parallel) text += " sp";
  if (l.tp_comm_overlap) text += " tpo";
  if (l.context_parallel > 1)
    text += fmt::format(" cp{} {}", l.context_parallel, to_string(l.context_exchange));
  if (l.device_order != DeviceOrder::PipelineOutermost)
    text += " " + std::string(to_string(l.device_order));
  return text;
}

std::string error(double predicted, double published) {
  return fmt::format("{:+.1f}%", (predicted / published - 1) * 100);
}

}  // namespace

int main() {
  fmt::print("Megatron-LM weak scaling on H100 (Megatron-Core r0.8.0), published layouts\n\n");
  fmt::print(
      "| model | GPUs | TP | PP | published TFLOP/s | predicted | error | layout | "
      "micro-batches of 1: predicted | error | peak GiB |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n");
  for (const auto& run : h100::kMegatronWeakScaling) {
    const MachineSpec machine = h100::nonblocking_h100(run.gpus);
    const Graph model = h100::model_of(run);
    OptimizeOptions o = h100::layout_of(run);
    const Plan plan = optimize_plan(model, machine, o);
    o.layout.micro_batches = static_cast<int>(run.batch / 48);
    const Plan one = optimize_plan(model, machine, o);
    fmt::print("| {} | {} | {} | {} | {} | {:.1f} | {} | {} | {:.1f} | {} | {:.1f} |\n", run.name,
               run.gpus, run.tp, run.pp, run.published, plan.summary.tflops_per_device,
               error(plan.summary.tflops_per_device, run.published), layout(*plan.pipeline),
               one.summary.tflops_per_device, error(one.summary.tflops_per_device, run.published),
               one.summary.peak_memory_bytes / double(1 << 30));
  }

  fmt::print(
      "\nLlama 3 405B (Table 4), dgx-h100 (pods of 384 nodes), bf16, 2,048 x 8,192 tokens\n\n");
  fmt::print(
      "| GPUs | TP | PP | DP | published TFLOP/s | predicted | error | layout | peak GiB |\n");
  fmt::print("|---:|---:|---:|---:|---:|---:|---:|---|---:|\n");
  for (const auto& run : h100::kLlama3Pretraining) {
    const Plan plan =
        optimize_plan(h100::llama3_model(run), h100::llama3_cluster(run), h100::llama3_layout());
    fmt::print("| {} | 8 | 16 | {} | {} | {:.1f} | {} | {} | {:.1f}{} |\n", run.gpus,
               run.gpus / 128, run.published, plan.summary.tflops_per_device,
               error(plan.summary.tflops_per_device, run.published), layout(*plan.pipeline),
               plan.summary.peak_memory_bytes / double(1 << 30),
               plan.summary.fits_in_memory ? "" : " (does not fit)");
  }

  {
    const Plan plan = optimize_plan(h100::llama3_long_context_model(),
                                    load_machine("dgx-h100", {0, h100::kLlama3LongContextGpus}),
                                    h100::llama3_long_context_layout());
    fmt::print("| {} (CP 16, 131,072 tokens) | 8 | 16 | 8 | {} | {:.1f} | {} | {} | {:.1f}{} |\n",
               h100::kLlama3LongContextGpus, h100::kLlama3LongContextPublished,
               plan.summary.tflops_per_device,
               error(plan.summary.tflops_per_device, h100::kLlama3LongContextPublished),
               layout(*plan.pipeline), plan.summary.peak_memory_bytes / double(1 << 30),
               plan.summary.fits_in_memory ? "" : " (does not fit)");
  }

  const Plan fp8 = optimize_plan(h100::fp8_llama70b_model(), load_machine("dgx-h100", {0, 64}),
                                 h100::fp8_llama70b_layout());
  fmt::print(
      "\nLlama 3 70B in FP8 (Megatron-LM examples/llama), dgx-h100, 128 x 8,192 tokens\n\n"
      "| GPUs | TP | PP | VP | published TFLOP/s | predicted | error | layout | peak GiB |\n"
      "|---:|---:|---:|---:|---:|---:|---:|---|---:|\n"
      "| 64 | 4 | 8 | 5 | {} | {:.1f} | {} | {} | {:.1f} |\n",
      h100::kFp8Llama70bPublished, fp8.summary.tflops_per_device,
      error(fp8.summary.tflops_per_device, h100::kFp8Llama70bPublished), layout(*fp8.pipeline),
      fp8.summary.peak_memory_bytes / double(1 << 30));

  fmt::print(
      "\nWith context parallelism: Megatron-LM's FP8 Llama 3 runs (examples/llama), 8,192 "
      "tokens\n\n"
      "| model | GPUs | TP | PP | CP | VP | published TFLOP/s | predicted | error | layout | peak "
      "GiB |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n");
  for (const auto& run : h100::kFp8ContextRuns) {
    const Plan plan =
        optimize_plan(h100::fp8_context_model(run), load_machine("dgx-h100", {0, run.gpus}),
                      h100::fp8_context_layout(run));
    fmt::print("| {} | {} | {} | {} | {} | {} | {} | {:.1f} | {} | {} | {:.1f} |\n", run.model,
               run.gpus, run.tp, run.pp, run.cp, run.interleave, run.published,
               plan.summary.tflops_per_device, error(plan.summary.tflops_per_device, run.published),
               layout(*plan.pipeline), plan.summary.peak_memory_bytes / double(1 << 30));
  }
}
