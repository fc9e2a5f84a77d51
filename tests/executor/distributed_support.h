#pragma once
// Runs through the real launcher: plan files, mpirun, unity-worker processes.
#include <unistd.h>

#include <filesystem>

#include "executor_test_support.h"
#include "unity/core/json_io.h"
#include "unity/core/plan/plan.h"
#include "unity/executor/launcher.h"

namespace unity::executor::testing {

// A scratch directory removed at the end of the test.
struct TempDir {
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "unity-exec-test-XXXXXX").string();
    path = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::filesystem::path path;
};

// A plan for `pcg` on `devices` cpu-local ranks with the mapping search's views, written to a file.
inline std::filesystem::path write_plan(const TempDir& dir, const std::string& name,
                                        const Graph& pcg, int devices) {
  Plan plan;
  plan.machine = load_machine("cpu-local", {0, devices});
  plan.pcg = pcg;
  const CostModel model(plan.machine);
  const MappingCost costs(plan.pcg, model);
  plan.mapping = optimize_machine_mapping(costs);
  plan.summary.model = pcg.name;
  plan.summary.machine = "cpu-local";
  plan.summary.devices = devices;
  plan.summary.mode = "hand-built";
  plan.summary.iteration_time_ms = plan.mapping.cost.time() * 1e3;
  const auto path = dir.path / (name + ".json");
  write_text_file_atomic(path, plan_to_json(plan).dump() + "\n");
  return path;
}

inline std::filesystem::path write_plan(const TempDir& dir, const std::string& name,
                                        const Plan& plan) {
  const auto path = dir.path / (name + ".json");
  write_text_file_atomic(path, plan_to_json(plan).dump() + "\n");
  return path;
}

inline LaunchOptions launch_options(const std::filesystem::path& plan, int ranks) {
  LaunchOptions o;
  o.plan = plan;
  o.ranks = ranks;
  o.iterations = 10;
  o.learning_rate = 0.05;
  o.worker = UNITY_WORKER_PATH;
  o.timeout_seconds = 60;
  return o;
}

inline bool have_mpirun() {
  try {
    find_mpirun("");
    return true;
  } catch (const RunError&) {
    return false;
  }
}

}  // namespace unity::executor::testing
