// Published mixture-of-experts runs (shared/reference/moe-runs.md) planned with their layouts, and
// the joint search's own plan of each model on the same machine with its search seconds (the
// issue's budget: under 60 s on one core), side by side.
//   build/tests/bench/unity_bench_moe_runs
#include <chrono>
#include <string>

#include <fmt/format.h>

#include "../moe_runs.h"

using namespace unity;

namespace {

std::string layout(const PipelinePlan& l) {
  std::string text =
      fmt::format("tp{} pp{} dp{} ep{} m{}x{}", l.tensor_parallel, l.pipeline_stages,
                  l.data_parallel, l.expert_parallel, l.micro_batches, l.micro_batch_size);
  if (l.expert_tensor_parallel > 1) text += fmt::format(" etp{}", l.expert_tensor_parallel);
  if (l.interleave > 1) text += fmt::format(" v{}", l.interleave);
  text += fmt::format(" {} {}", to_string(l.recompute), to_string(l.token_dispatcher));
  if (l.ep_comm_overlap) text += " overlapped";
  if (l.zero_stage) text += fmt::format(" zero{}", l.zero_stage);
  return text;
}

void row(const char* name, const Graph& model, const MachineSpec& machine,
         const OptimizeOptions& published_layout, double tokens) {
  const Plan fixed = optimize_plan(model, machine, published_layout);
  OptimizeOptions joint;
  joint.mode = "joint";
  const auto t0 = std::chrono::steady_clock::now();
  const Plan plan = optimize_plan(model, machine, joint);
  const double search =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int gpus = machine.num_devices();
  for (const auto* p : {&fixed, &plan}) {
    const PipelinePlan& l = *p->pipeline;
    fmt::print("| {} | {} | {} | {:.2f} | {:.0f} | {:.1f}{} | {} |\n", name,
               p == &fixed ? "published layout" : "joint search", layout(l), l.iteration_time,
               tokens / l.iteration_time / gpus, l.peak_memory / double(1 << 30),
               l.fits ? "" : " (does not fit)",
               p == &fixed ? std::string() : fmt::format("{:.1f}", search));
  }
  std::fflush(stdout);
}

}  // namespace

int main() {
  fmt::print(
      "| model | plan | layout | step s | tokens/s per GPU | peak GiB | search s |\n"
      "|---|---|---|---:|---:|---:|---:|\n");
  row("qwen3-235b-a22b, 256 H100", moe::qwen3_model(), load_machine("dgx-h100", {0, 256}),
      moe::qwen3_layout(false), 2048.0 * 4096);
  row("deepseek-v3, 1,024 H100", moe::deepseek_v3_model(), load_machine("dgx-h100", {0, 1024}),
      moe::deepseek_v3_layout(), 8192.0 * 4096);
}
