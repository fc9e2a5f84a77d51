// Published H100 runs (shared/reference/h100-dense-runs.md) planned with their published layouts:
// Megatron-LM's weak-scaling table with the micro-batch the planner picks and with micro-batches
// of one sequence, and Llama 3 405B's first two rows of Table 4.
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
  for (auto [gpus, published] : {std::pair{8192, 430.0}, std::pair{16384, 400.0}}) {
    const MachineSpec machine = load_machine("dgx-h100", {0, gpus});
    const Graph model = load_model_for_devices("llama3-405b", gpus, 2048);
    const Plan plan = optimize_plan(model, machine, h100::megatron_core_layout(8, 16));
    fmt::print("| {} | 8 | 16 | {} | {} | {:.1f} | {} | {} | {:.1f}{} |\n", gpus, gpus / 128,
               published, plan.summary.tflops_per_device,
               error(plan.summary.tflops_per_device, published), layout(*plan.pipeline),
               plan.summary.peak_memory_bytes / double(1 << 30),
               plan.summary.fits_in_memory ? "" : " (does not fit)");
  }
}
