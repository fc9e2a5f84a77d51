// Machine-mapping DP time for resnext50 data-parallel on Summit at 6..192 GPUs (issue: the DP must
// grow no faster than linearly in the GPU count). Prints a table; asserts nothing.
#include <chrono>

#include <fmt/format.h>

#include "unity/core/plan/plan_optimizer.h"

using namespace unity;

int main(int argc, char** argv) {
  const std::string model_name = argc > 1 ? argv[1] : "resnext50";
  const int repeats = 5;
  fmt::print("machine-mapping DP, {} data-parallel on summit (median of {} runs)\n", model_name,
             repeats);
  fmt::print("{:>6} {:>6} {:>12} {:>12} {:>14} {:>12} {:>16}\n", "GPUs", "nodes", "DP ms",
             "ms per GPU", "subproblems", "iter ms", "growth vs 6 GPUs");
  double base_ms = 0;
  for (int gpus : {6, 12, 24, 48, 96, 192}) {
    const MachineSpec machine = load_machine("summit", {0, gpus});
    const Graph model = load_model_for_devices(model_name, gpus);
    const OptimizeOptions options;
    std::vector<double> times;
    Plan plan;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      plan = optimize_plan(model, machine, options);
      times.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    const double ms = times[repeats / 2];
    if (gpus == 6) base_ms = ms;
    fmt::print("{:>6} {:>6} {:>12.2f} {:>12.3f} {:>14} {:>12.2f} {:>10.2f}x / {:>3}x\n", gpus,
               machine.num_nodes, ms, ms / gpus, plan.summary.mapping_subproblems,
               plan.summary.iteration_time_ms, ms / base_ms, gpus / 6);
  }
  fmt::print("linear growth means the 'growth' column stays at or below the GPU ratio beside it\n");
  return 0;
}
