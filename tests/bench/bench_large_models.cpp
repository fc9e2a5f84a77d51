// Megatron-LM's Table 1 (shared/reference/megatron-lm-table1.md) planned on Selene: Megatron's
// layout (--mode expert --tp t --pp p) against the published TFLOP/s per GPU, and the joint
// search's own plan beside it, with the search seconds of each; then search time against GPU count:
// gpt-1t on selene up to 3,072 GPUs, and Llama 3 405B on dgx-h100 (the Llama 3 cluster: pods of
// 3,072 GPUs) up to 16,384, at Llama 3's batch of 2,048 sequences of 8,192 tokens.
//   build/tests/bench/unity_bench_large_models [--budget 200] [--rows 1-10] [--scaling gpt-1t]
//                                              [--h100-scaling llama3-405b]
#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../megatron_table1.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/plan/plan_optimizer.h"

using namespace unity;

namespace {

std::string layout(const Plan& p) {
  if (!p.pipeline) return p.summary.origin.empty() ? "joint search" : p.summary.origin;
  const auto& l = *p.pipeline;
  std::string text = fmt::format("tp{}", l.tensor_parallel);
  if (l.context_parallel > 1) text += fmt::format(" cp{}", l.context_parallel);
  text += fmt::format(" pp{} dp{} m{}", l.pipeline_stages, l.data_parallel, l.micro_batches);
  if (l.interleave > 1) text += fmt::format(" v{}", l.interleave);
  text += fmt::format(" {}", to_string(l.recompute));
  if (l.zero_stage) text += fmt::format(" zero{}", l.zero_stage);
  if (l.sequence_parallel) text += " sp";
  return text;
}

Plan joint_plan(const Graph& model, const MachineSpec& machine, std::int64_t budget) {
  OptimizeOptions joint;
  joint.mode = "joint";
  joint.budget = budget;
  return optimize_plan(model, machine, joint);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Joint search seconds against GPU count on dgx-h100 at a fixed batch of 2,048 sequences.
int h100_search_scaling(const std::string& model_name, std::int64_t budget) {
  if (model_name.empty() || model_name == "none") return 0;
  fmt::print("\nJoint search seconds for {} against GPU count (dgx-h100, batch 2,048)\n\n",
             model_name);
  fmt::print("| GPUs | search s | iteration ms | TFLOP/s per GPU | layout |\n");
  fmt::print("|---:|---:|---:|---:|---|\n");
  for (int gpus : {1024, 2048, 4096, 8192, 16384}) {
    const MachineSpec cluster = load_machine("dgx-h100", {0, gpus});
    const Graph model = load_model_for_devices(model_name, gpus, 2048);
    const auto t0 = std::chrono::steady_clock::now();
    const Plan plan = joint_plan(model, cluster, budget);
    fmt::print("| {} | {:.1f} | {:.0f}{} | {:.1f} | {} |\n", gpus, seconds_since(t0),
               plan.summary.iteration_time_ms, plan.summary.fits_in_memory ? "" : " (does not fit)",
               plan.summary.tflops_per_device, layout(plan));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t budget = 200;
  int first = 1, last = 10;
  std::string scaling = "gpt-1t";
  std::string h100_scaling = "llama3-405b";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--budget") budget = std::stoll(argv[i + 1]);
    if (flag == "--rows") std::sscanf(argv[i + 1], "%d-%d", &first, &last);
    if (flag == "--scaling") scaling = argv[i + 1];
    if (flag == "--h100-scaling") h100_scaling = argv[i + 1];
  }
  fmt::print("Megatron-LM Table 1 on selene (joint budget {})\n\n", budget);
  fmt::print(
      "| model | GPUs | batch | published TFLOP/s | Megatron layout predicted | error | "
      "Megatron ms | joint ms | joint vs Megatron | joint TFLOP/s | joint peak GiB | "
      "joint layout | joint search s |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n");
  for (int r = first; r <= last; ++r) {
    const megatron::Table1Row& row = megatron::kTable1[r - 1];
    const MachineSpec selene = load_machine("selene", {0, row.gpus});
    const Graph model = load_model_for_devices(row.model, row.gpus, row.batch);
    const Plan megatron = optimize_plan(model, selene, megatron::layout_of(row));
    const auto t0 = std::chrono::steady_clock::now();
    const Plan plan = joint_plan(model, selene, budget);
    const double search = seconds_since(t0);
    const double predicted = megatron.summary.tflops_per_device;
    fmt::print(
        "| {} | {} | {} | {:.0f} | {:.1f} (tp{} pp{}) | {:+.1f}% | {:.0f} | {:.0f} | {:.2f}x | "
        "{:.1f} | {:.1f} | {} | {:.1f} |\n",
        row.model, row.gpus, row.batch, row.published, predicted, row.tp, row.pp,
        100 * (predicted / row.published - 1), megatron.summary.iteration_time_ms,
        plan.summary.iteration_time_ms,
        megatron.summary.iteration_time_ms / plan.summary.iteration_time_ms,
        plan.summary.tflops_per_device, plan.summary.peak_memory_bytes / (1 << 30), layout(plan),
        search);
    std::fflush(stdout);
  }
  if (scaling.empty() || scaling == "none") return h100_search_scaling(h100_scaling, budget);
  fmt::print("\nJoint search seconds for {} against GPU count (selene, batch = GPUs)\n\n", scaling);
  fmt::print("| GPUs | search s | iteration ms | layout |\n|---:|---:|---:|---|\n");
  for (int gpus : {64, 256, 1024, 3072}) {
    const MachineSpec selene = load_machine("selene", {0, gpus});
    const Graph model = load_model_for_devices(scaling, gpus, gpus);
    const auto t0 = std::chrono::steady_clock::now();
    const Plan plan = joint_plan(model, selene, budget);
    fmt::print("| {} | {:.1f} | {:.0f}{} | {} |\n", gpus, seconds_since(t0),
               plan.summary.iteration_time_ms, plan.summary.fits_in_memory ? "" : " (does not fit)",
               layout(plan));
    std::fflush(stdout);
  }
  return h100_search_scaling(h100_scaling, budget);
}
