// moe-tiny (two layers of 4 experts, top 2) trained with its experts spread over 2 CPU ranks
// (`--tp 2 --ep 2`: each rank runs its 2 experts on every token routed to them, the partial
// outputs summed), equal to one rank (--check) while the loss falls; and the plan reports the
// expert layout it holds (optimize --json).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace fs = std::filesystem;

TEST(MoeTraining, ExpertsSplitOverTwoRanksTrainLikeOne) {
  const fs::path plan =
      fs::temp_directory_path() / ("unity-moe-" + std::to_string(getpid()) + ".plan.json");
  const auto planned = run_cli(
      "optimize moe-tiny --machine cpu-local --gpus 2 --tp 2 --pp 1 --ep 2 --mode expert --json "
      "--out " +
      plan.string());
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  const auto j = nlohmann::json::parse(planned.out);
  EXPECT_EQ(j["ep"], 2);
  EXPECT_EQ(j["etp"], 1);
  EXPECT_EQ(j["edp"], 1);
  EXPECT_EQ(j["cp"], 1);
  // Per iteration: 2 layers x 4 all-to-alls, each rank sending its 128 of the 256 tokens (8
  // samples of 32: moe-tiny's 4 a device) x 64 floats, a copy per picked expert (2 of 4) spread
  // over the 2 ranks, the other rank's half: 2 x 4 x 2 ranks x 128 x 64 x 4 bytes x 2 / 2.
  EXPECT_EQ(j["alltoall_bytes"].get<double>(), 524288.0);
  // The replica's plan splits each Experts operator over its two devices.
  const auto saved = nlohmann::json::parse(std::ifstream(plan));
  bool split = false;
  for (const auto& kind : saved["pipeline"]["kind_plans"])
    for (const auto& n : kind["pcg"]["nodes"])
      if (n["op"] == "Experts" && n.contains("outputs") &&
          n["outputs"][0]["replica"].get<int>() == 2)
        split = true;
  EXPECT_TRUE(split);
  const auto run = run_cli("run " + plan.string() + " --iterations 3 --check --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto r = nlohmann::json::parse(run.out);
  EXPECT_LT(r["max_rel_diff"].get<double>(), 1e-4);
  EXPECT_LT(r["losses"].back().get<double>(), r["losses"].front().get<double>());
  fs::remove(plan);
}
