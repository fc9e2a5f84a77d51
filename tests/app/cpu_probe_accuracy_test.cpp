// A first plan for cpu-local on a computer that was never calibrated: `unity optimize` probes the
// computer (projects/include/unity/use_cases/cpu_probe.h) into an empty cache folder, and the
// plans it makes for mnist-mlp (joint) and gpt-tiny (a pipelined layout) on 2 ranks predict
// their measured iteration within 25% (issue 29). Each plan is run three times, 20 iterations
// after 3 of warm-up, and the median of the runs' medians is compared. (With the nominal figures
// instead, the machine predicted mnist-mlp at 8.56 ms for a run of 0.93 ms.)
//
// The test measures this machine, so it runs alone (RUN_SERIAL); work outside the test suite
// on the same cores still changes what it measures (a rules verification beside it made these
// 2-rank runs 5 to 10 times slower), so it skips when other work keeps the cores busy before or
// after it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace fs = std::filesystem;

namespace {

nlohmann::json json_of(const CliResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

// The fraction of the cores' time that was idle over the next `seconds` (/proc/stat).
double idle_fraction(double seconds) {
  auto sample = [] {
    std::ifstream in("/proc/stat");
    std::string cpu;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    return std::pair{idle + iowait, user + nice + system + idle + iowait + irq + softirq + steal};
  };
  const auto [idle0, total0] = sample();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const auto [idle1, total1] = sample();
  return total1 > total0 ? (idle1 - idle0) / (total1 - total0) : 1.0;
}

// Why the machine cannot be measured now, or empty: other work used more than a fifth of it.
std::string busy_machine() {
  const double idle = idle_fraction(1.0);
  return idle < 0.8
             ? fmt::format("other processes kept {:.0f}% of the cores busy", 100 * (1 - idle))
             : std::string();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Checked {
  double predicted = 0, measured = 0;
};

Checked predict_and_run(const Folder& dir, const std::string& env, const std::string& model,
                        const std::string& flags) {
  Checked out;
  const std::string plan = dir / (model + ".json");
  const auto planned =
      json_of(run_cli(fmt::format("optimize {} --machine cpu-local --gpus 2 {} --json --out {}",
                                  model, flags, plan),
                      env));
  EXPECT_EQ(planned["cpu_figures"].value("kind", ""), "probed") << planned.dump();
  out.predicted = planned.value("iteration_time_ms", 0.0);
  std::vector<double> runs;
  for (int i = 0; i < 3; ++i) {
    const auto run =
        json_of(run_cli(fmt::format("run {} --iterations 20 --warmup 3 --json", plan), env));
    runs.push_back(run.value("measured_iteration_ms", 0.0));
    EXPECT_DOUBLE_EQ(run.value("predicted_iteration_ms", 0.0), out.predicted);
  }
  out.measured = median(runs);
  fmt::print("{} {}: predicted {:.3f} ms, measured {:.3f} ms (runs {:.3f}), {:+.1f}%\n", model,
             flags, out.predicted, out.measured, fmt::join(runs, ", "),
             100.0 * (out.predicted - out.measured) / std::max(1e-9, out.measured));
  return out;
}

// One attempt: a probe into an empty cache, the two plans, their runs; whether both predictions
// are within 25% of their measured iterations ("" when they are, else what was off).
std::string attempt(const Folder& dir, int index) {
  const std::string cache = dir / fmt::format("cache{}", index);
  const std::string env = "XDG_CACHE_HOME=" + cache + " UNITY_CPU_LOCAL=probe";
  std::string off;
  for (const auto& [model, flags] : std::vector<std::pair<std::string, std::string>>{
           {"mnist-mlp", ""}, {"gpt-tiny", "--mode expert --pp 2"}}) {
    const Checked c = predict_and_run(dir, env, model, flags);
    EXPECT_GT(c.measured, 0);
    if (std::abs(c.predicted - c.measured) > 0.25 * c.measured)
      off += fmt::format("{}: predicted {:.3f} ms, measured {:.3f} ms; ", model, c.predicted,
                         c.measured);
  }
  // The probe was kept for the next plan: one file for this computer and 2 ranks.
  int kept = 0;
  for (const auto& e : fs::directory_iterator(fs::path(cache) / "unity"))
    kept += e.path().extension() == ".json";
  EXPECT_EQ(kept, 1);
  return off;
}

// This VM's two vCPUs slow each other by up to 2x, varying by the minute, so one attempt's probe
// and runs can see different machines: a second attempt (a new probe) is made when the first is
// off, and the test fails when both are.
TEST(CpuProbeAccuracy, FirstPlansOnTwoRanksPredictTheirRunsWithin25Percent) {
  if (!has_mpirun()) GTEST_SKIP() << "no mpirun: two ranks cannot run here";
  if (const std::string busy = busy_machine(); !busy.empty())
    GTEST_SKIP() << busy << ": a timing comparison decides nothing";
  Folder dir("cpu_probe_accuracy");
  std::string off;
  for (int i = 0; i < 2; ++i) {
    const std::string this_off = attempt(dir, i);
    if (const std::string busy = busy_machine(); !busy.empty())
      GTEST_SKIP() << busy << " after the runs: a timing comparison decides nothing";
    if (this_off.empty()) return;
    off += fmt::format("attempt {}: {}", i + 1, this_off);
  }
  ADD_FAILURE() << "not within 25% in either attempt: " << off;
}

}  // namespace
