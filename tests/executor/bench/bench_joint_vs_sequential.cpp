// The paper's claim on this machine: mnist-mlp on 2 cpu-local ranks, the joint plan against the
// sequential one (algebraic rewrites first, then parallelisation) and plain data parallelism: the
// cost model's prediction and the measured median iteration (rounds alternate between plans so they
// share the machine's noise).
//   build/tests/executor/unity_bench_joint_vs_sequential [--rounds 3] [--iterations 20] [--machine
//   FILE]
#include <cstdlib>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "unity/core/json_io.h"
#include "unity/core/plan_optimizer.h"
#include "unity/executor/launcher.h"
#include "unity/executor/run_files.h"

using namespace unity;
using namespace unity::executor;

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
  struct Entry {
    std::string mode;
    Plan plan;
    std::filesystem::path path;
    std::vector<double> ms;
  };
  std::vector<Entry> entries;
  for (const char* mode : {"joint", "sequential", "data-parallel"}) {
    OptimizeOptions o;
    o.mode = mode;
    Entry e{mode, optimize_plan(model, machine, o), dir / (std::string(mode) + ".json"), {}};
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
  fmt::print("{:<14} {:>14} {:>14} {:>12}  {}\n", "plan", "predicted ms", "measured ms",
             "sends/iter", "substitutions");
  for (const auto& e : entries) {
    std::string applied;
    for (const auto& a : e.plan.summary.substitutions_applied)
      applied += (applied.empty() ? "" : ", ") + a.rule;
    fmt::print("{:<14} {:>14.3f} {:>14.3f} {:>10.0f} B  {}\n", e.mode,
               e.plan.summary.iteration_time_ms, median(e.ms), e.plan.summary.communication_bytes,
               applied.empty() ? "-" : applied);
  }
  const double joint = median(entries[0].ms), sequential = median(entries[1].ms);
  fmt::print("joint / sequential measured: {:.3f} (predicted {:.3f})\n", joint / sequential,
             entries[0].plan.summary.iteration_time_ms / entries[1].plan.summary.iteration_time_ms);
  std::filesystem::remove_all(dir);
  return 0;
}
