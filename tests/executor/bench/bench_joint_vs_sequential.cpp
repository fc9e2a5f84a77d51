// The paper's claim on this machine: mnist-mlp on 2 cpu-local ranks, the joint plan against the
// sequential one (algebraic rewrites first, then parallelisation) and plain data parallelism: the
// cost model's prediction and the measured median iteration (rounds alternate between plans so they
// share the machine's noise). Two rule sets:
//  - the paper's setting (Figure 2): the hand-written rules' data and reduction parallelism only
//    (the generated rules name no such forms to veto). Column parallelism
//    (`linear_output_parallel` and the Megatron pairs `mlp_*`) is vetoed, so the sequential search
//    fuses Linear+ReLU first and is left with data parallelism, while the joint search keeps fc1
//    unfused and splits its reduction: it exchanges activations instead of all-reducing the
//    weights' gradients (the "sends/iter" column);
//  - all rules (the built-in set): both searches find a tensor-parallel MLP pair.
//   build/tests/executor/unity_bench_joint_vs_sequential [--rounds 3] [--iterations 20]
//   [--machine FILE]
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "../../hand_written_rules.h"
#include "unity/core/json_io.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/executor/launcher.h"
#include "unity/executor/run_files.h"

using namespace unity;
using namespace unity::executor;

namespace {

struct Entry {
  std::string setting, mode;
  Plan plan;
  std::filesystem::path path;
  std::vector<double> ms;
};

std::string applied_rules(const Plan& plan) {
  std::string applied;
  for (const auto& a : plan.summary.substitutions_applied)
    applied += (applied.empty() ? "" : ", ") + a.rule;
  return applied.empty() ? "-" : applied;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3, iterations = 20;
  std::string machine_spec = "cpu-local";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--rounds") rounds = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--iterations") iterations = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--machine") machine_spec = argv[i + 1];
  }
  const MachineSpec machine = load_machine(machine_spec, {0, 2});
  const Graph model = load_model_for_devices("mnist-mlp", 2);
  const auto dir = std::filesystem::temp_directory_path() / "unity-bench-joint";
  std::filesystem::create_directories(dir);
  const std::vector<std::pair<std::string, std::vector<std::string>>> settings = {
      {"paper", {"mlp_*", "linear_output_parallel"}}, {"all rules", {}}};
  std::vector<Entry> entries;
  for (const auto& [setting, vetoes] : settings)
    for (const char* mode : {"joint", "sequential", "data-parallel"}) {
      if (std::string(mode) == "data-parallel" && !vetoes.empty()) continue;  // no rules: once
      OptimizeOptions o;
      o.mode = mode;
      o.vetoes = vetoes;
      if (!vetoes.empty()) o.rule_files = hand_written_rule_files();
      const auto path = dir / fmt::format("{}-{}.json", entries.size(), mode);
      Entry e{setting, mode, optimize_plan(model, machine, o), path, {}};
      write_text_file_atomic(e.path, plan_to_json(e.plan).dump() + "\n");
      entries.push_back(std::move(e));
    }
  for (int r = 0; r < rounds; ++r)
    for (auto& e : entries) {
      LaunchOptions l;
      l.plan = e.path;
      l.ranks = 2;
      l.iterations = iterations;
      l.warmup = 3;
      l.worker = UNITY_WORKER_PATH;
      const auto result = launch_run(l);
      e.ms.insert(e.ms.end(), result.training.iteration_ms.begin(),
                  result.training.iteration_ms.end());
    }
  fmt::print("mnist-mlp (global batch 128) on 2 {} ranks: {} rounds x {} iterations each\n",
             machine.name, rounds, iterations);
  fmt::print("{:<10} {:<14} {:>13} {:>12} {:>12}  {}\n", "rules", "plan", "predicted ms",
             "measured ms", "sends/iter", "substitutions");
  for (const auto& e : entries)
    fmt::print("{:<10} {:<14} {:>13.3f} {:>12.3f} {:>10.0f} B  {}\n", e.setting, e.mode,
               e.plan.summary.iteration_time_ms, median(e.ms), e.plan.summary.communication_bytes,
               applied_rules(e.plan));
  for (const auto& [setting, vetoes] : settings) {
    const Entry *joint = nullptr, *sequential = nullptr;
    for (const auto& e : entries) {
      if (e.setting != setting) continue;
      if (e.mode == "joint") joint = &e;
      if (e.mode == "sequential") sequential = &e;
    }
    fmt::print("{:<10} joint / sequential: measured {:.3f}, predicted {:.3f}\n", setting,
               median(joint->ms) / median(sequential->ms),
               joint->plan.summary.iteration_time_ms / sequential->plan.summary.iteration_time_ms);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
