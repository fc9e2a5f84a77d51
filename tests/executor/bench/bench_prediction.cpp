// Predicted against measured iteration times after `unity calibrate`: for 1, 2 and 4 ranks,
// calibrate this machine with that many ranks (the CLI, as a user would), plan mnist-mlp and a
// reduced mlp (16 Linear layers of 1024) data-parallel and joint on the calibrated machine, run
// each plan (three launches) and compare the cost model's prediction with the measured median.
//   build/tests/executor/unity_bench_prediction [--ranks 1,2,4] [--iterations 20]
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "unity/core/json_io.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/core/zoo/scaled_zoo.h"
#include "unity/executor/launcher.h"
#include "unity/executor/op_profiles.h"
#include "unity/executor/program.h"
#include "unity/executor/run_files.h"

using namespace unity;
using namespace unity::executor;

namespace {

double measure(const Plan& plan, const std::filesystem::path& path, int ranks, int iterations) {
  write_text_file_atomic(path, plan_to_json(plan).dump() + "\n");
  if (ranks == 1) {
    const Program p = lower_plan(plan.pcg, plan.mapping.views, 1);
    auto backend = make_cpu_backend(1);
    auto comm = make_local_communicator();
    TrainingOptions o;
    o.iterations = iterations;
    o.warmup = 3;
    return median(train(p, o, *backend, *comm).iteration_ms);
  }
  LaunchOptions l;
  l.plan = path;
  l.ranks = ranks;
  l.iterations = iterations;
  l.warmup = 3;
  l.worker = UNITY_WORKER_PATH;
  return median(launch_run(l).training.iteration_ms);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> rank_counts = {1, 2, 4};
  int iterations = 20;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--iterations") iterations = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--ranks") {
      rank_counts.clear();
      std::stringstream s(argv[i + 1]);
      for (std::string item; std::getline(s, item, ',');) rank_counts.push_back(std::stoi(item));
    }
  }
  const auto dir = std::filesystem::temp_directory_path() / "unity-bench-prediction";
  std::filesystem::create_directories(dir);
  fmt::print("{:<12} {:>5} {:<14} {:>13} {:>13} {:>8}\n", "model", "ranks", "plan", "predicted ms",
             "measured ms", "error");
  double worst = 0;
  for (int ranks : rank_counts) {
    const auto machine_file = dir / fmt::format("cpu-local-calibrated-{}.json", ranks);
    const std::string cmd =
        fmt::format("{} calibrate --backend cpu --ranks {} --out {} > /dev/null", UNITY_CLI_PATH,
                    ranks, machine_file.string());
    if (std::system(cmd.c_str()) != 0) {
      fmt::print("unity calibrate --ranks {} failed\n", ranks);
      return 1;
    }
    const MachineSpec machine = load_machine(machine_file.string(), {0, ranks});
    const auto profiles = MeasuredProfiles::load(profiles_path_for(machine_file));
    const std::vector<std::pair<std::string, Graph>> models = {
        {"mnist-mlp", zoo::build("mnist-mlp", 64 * ranks)},
        {"mlp/8", zoo::build_scaled("mlp", 64 * ranks, 1.0 / 8)}};
    for (const auto& [name, model] : models)
      for (const char* mode : {"data-parallel", "joint"}) {
        if (ranks == 1 && std::string(mode) == "joint") continue;  // one device: the same plan
        OptimizeOptions o;
        o.mode = mode;
        const Plan plan = optimize_plan(model, machine, o);
        // The prediction `unity run PLAN --machine FILE` prints: the calibrated machine and the
        // operators measured for it (profiles kept beside the machine file).
        const double predicted = predicted_iteration_ms(plan.pcg, plan.mapping.views, machine,
                                                        plan.summary.optimizer, profiles);
        // This VM's cores talk to each other at speeds that vary from launch to launch (up to 4x
        // for shared-memory MPI), so the measurement is the median of three launches.
        std::vector<double> launches;
        for (int launch = 0; launch < 3; ++launch)
          launches.push_back(measure(plan, dir / "plan.json", ranks, iterations));
        const double measured = median(launches);
        const double error = (predicted - measured) / measured;
        worst = std::max(worst, std::abs(error));
        fmt::print("{:<12} {:>5} {:<14} {:>13.3f} {:>13.3f} {:>+7.1f}%\n", name, ranks, mode,
                   predicted, measured, 100 * error);
      }
  }
  fmt::print("largest |error|: {:.1f}% (target: within 25%)\n", 100 * worst);
  std::filesystem::remove_all(dir);
  return 0;
}
