// The pipeline bubble a run measures against the one its plan predicts, after `unity calibrate`:
// gpt-tiny (in float32 on the CPU) in Megatron-LM's layout over 2 pipeline stages, 2 and 4
// micro-batches, with and without recomputation, on 2 ranks (2 stages) and 4 ranks (2 stages x 2
// copies, the run). Each row is the median of three launches of `unity run --json`. More
// ranks than cores time-share the cores: a rank's bubble is then filled by another's work and its
// passes stretch, so only runs with a core per rank measure a bubble.
//   build/tests/executor/unity_bench_pipeline_bubble [--iterations 20] [--ranks 2,4]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "unity/executor/run_files.h"

namespace {

std::string capture(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return out;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, p)) out.append(buffer, n);
  if (pclose(p) != 0) return {};
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 20;
  std::vector<int> rank_counts = {2, 4};
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--iterations") iterations = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--ranks") {
      rank_counts.clear();
      std::stringstream s(argv[i + 1]);
      for (std::string item; std::getline(s, item, ',');) rank_counts.push_back(std::stoi(item));
    }
  }
  const auto dir = std::filesystem::temp_directory_path() / "unity-bench-pipeline-bubble";
  std::filesystem::create_directories(dir);
  fmt::print("{:>5} {:>6} {:>10} {:>11} {:>10} {:>8} {:>13} {:>13}\n", "ranks", "micro",
             "recompute", "predicted", "measured", "error", "iteration ms", "predicted ms");
  double worst = 0;
  for (int ranks : rank_counts) {
    const auto machine = dir / fmt::format("cpu-local-calibrated-{}.json", ranks);
    if (std::system(fmt::format("{} calibrate --backend cpu --ranks {} --out {} > /dev/null 2>&1",
                                UNITY_CLI_PATH, ranks, machine.string())
                        .c_str()) != 0) {
      fmt::print("unity calibrate --ranks {} failed\n", ranks);
      return 1;
    }
    for (int m : {2, 4, 8})
      for (const char* recompute : {"none", "full"}) {
        std::vector<double> measured, iteration;
        double predicted = 0, predicted_ms = 0;
        for (int launch = 0; launch < 3; ++launch) {
          const std::string out = capture(fmt::format(
              "{} run gpt-tiny --machine {} --ranks {} --mode expert --tp 1 --pp 2 "
              "--micro-batches {} --recompute {} --iterations {} --warmup 3 --json 2>/dev/null",
              UNITY_CLI_PATH, machine.string(), ranks, m, recompute, iterations));
          if (out.empty()) {
            fmt::print("unity run failed ({} ranks, {} micro-batches)\n", ranks, m);
            return 1;
          }
          const auto j = nlohmann::json::parse(out);
          measured.push_back(j.at("bubble_fraction_measured").get<double>());
          iteration.push_back(j.at("measured_iteration_ms").get<double>());
          predicted = j.at("bubble_fraction_predicted").get<double>();
          predicted_ms = j.at("predicted_iteration_ms").get<double>();
        }
        const double bubble = unity::executor::median(measured);
        const double error = (bubble - predicted) / predicted;
        worst = std::max(worst, std::abs(error));
        fmt::print("{:>5} {:>6} {:>10} {:>11.3f} {:>10.3f} {:>+7.1f}% {:>13.3f} {:>13.3f}\n", ranks,
                   m, recompute, predicted, bubble, 100 * error, unity::executor::median(iteration),
                   predicted_ms);
      }
  }
  fmt::print("largest |error| of the bubble fraction: {:.1f}% (target: within 25%)\n", 100 * worst);
  std::filesystem::remove_all(dir);
  return 0;
}
