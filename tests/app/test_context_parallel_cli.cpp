// `unity optimize --cp`: a small decoder's sequence split over 2 CPU ranks, the plan reporting
// the split and its key/value traffic (computed by hand), and `unity run` naming what it does not
// run yet instead of running something else.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace fs = std::filesystem;

TEST(ContextParallelCli, OptimizeReportsTheSplitAndRunRefusesIt) {
  const fs::path plan =
      fs::temp_directory_path() / ("unity-cp-" + std::to_string(getpid()) + ".plan.json");
  const auto planned = run_cli(
      "optimize llama-tiny --machine cpu-local --gpus 4 --tp 1 --pp 1 --cp 2 --cp-comm p2p "
      "--mode expert --json --out " +
      plan.string());
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  const auto j = nlohmann::json::parse(planned.out);
  EXPECT_EQ(j["cp"], 2);
  // llama-tiny: 2 layers, 2 key/value heads of 16, sequences of 32 tokens, 16 of them (4 a
  // rank) over 2 copies, in float32 on CPU ranks. Each attention's keys and values: 2 x 32 x 32 x
  // 4 bytes a sample; the ring sends each rank's half forward, and with its gradient backward:
  // 3 x half x 8 samples a copy x 2 ranks of a copy x 2 layers x 2 copies.
  const double kv = 2.0 * 32 * 32 * 4;
  EXPECT_EQ(j["cp_bytes"].get<double>(), 3 * (kv / 2) * 8 * 2 * 2 * 2);
  const auto run = run_cli("run " + plan.string() + " --iterations 1");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("context parallelism"), std::string::npos) << run.err;
  const auto bad = run_cli("optimize llama-tiny --machine cpu-local --gpus 4 --cp 3 --mode expert");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("2 x 3 chunks"), std::string::npos) << bad.err;
  fs::remove(plan);
}
