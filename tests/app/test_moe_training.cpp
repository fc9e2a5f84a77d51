// moe-tiny (two layers of 4 experts, top 2) trained with its experts spread over 2 CPU ranks
// (`--tp 2 --ep 2`: each rank runs its 2 experts on every token routed to them, the partial
// outputs summed), equal to one rank (--check) while the loss falls; and the plan reports the
// expert layout it holds (optimize --json). With `--tp 1 --ep 2` the experts spread over the two
// data-parallel copies instead, the tokens of both gathered to each.
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

// Expert parallelism beyond the stage replica: one device a replica, 2 data-parallel copies, EP 2.
// Each copy runs 2 of the 4 experts on the 2 x 128 tokens of both copies (gathered) and the partial
// outputs are reduce-scattered back; the backward pass gathers the output gradients and
// reduce-scatters the input and gate gradients. Equal to one rank, and every exchange counted: a
// layer's forward sends the other copy its 128 x 64 tokens, its 128 x 4 gates and its half of the
// outputs (2 x 8,192 + 512 floats), as many again when full recomputation runs the forward anew,
// and its backward its output gradients and its half of the input and gate gradients (the same):
// 3 x 16,896 floats x 2 layers x 4 bytes.
TEST(MoeTraining, ExpertsSpreadOverDataParallelCopiesTrainLikeOne) {
  const fs::path plan =
      fs::temp_directory_path() / ("unity-moe-ep-" + std::to_string(getpid()) + ".plan.json");
  const auto planned = run_cli(
      "optimize moe-tiny --machine cpu-local --gpus 2 --tp 1 --pp 1 --ep 2 --mode expert "
      "--recompute full --json --out " +
      plan.string());
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  const auto j = nlohmann::json::parse(planned.out);
  EXPECT_EQ(j["ep"], 2);
  EXPECT_EQ(j["edp"], 1);  // each expert on one copy of the two
  const auto run = run_cli("run " + plan.string() + " --iterations 3 --check --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto r = nlohmann::json::parse(run.out);
  EXPECT_LT(r["max_rel_diff"].get<double>(), 1e-4);
  EXPECT_LT(r["losses"].back().get<double>(), r["losses"].front().get<double>());
  EXPECT_EQ(r["pipeline"]["expert_exchange_bytes_measured"].get<double>(),
            3.0 * (2 * 128 * 64 + 128 * 4) * 2 * 4);
  fs::remove(plan);
}

// Expert tensor parallelism with expert parallelism over copies (`--tp 2 --etp 2 --ep 2` on 4
// ranks: Megatron-Core's EP 2 x ETP 2): each replica splits every expert's FFN over its two
// devices as a dense MLP's, and each copy runs 2 of the 4 experts on the tokens of both copies.
// Equal to one rank, the saved plan saying how its experts are split.
TEST(MoeTraining, ExpertsSplitByWidthAndOverCopiesTrainLikeOne) {
  const fs::path plan =
      fs::temp_directory_path() / ("unity-moe-etp-" + std::to_string(getpid()) + ".plan.json");
  const auto planned = run_cli(
      "optimize moe-tiny --machine cpu-local --gpus 4 --tp 2 --pp 1 --etp 2 --ep 2 --mode expert "
      "--json --out " +
      plan.string());
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  const auto j = nlohmann::json::parse(planned.out);
  EXPECT_EQ(j["etp"], 2);
  EXPECT_EQ(j["ep"], 2);
  EXPECT_EQ(j["edp"], 1);  // tp 2 x dp 2 = etp 2 x ep 2
  const auto saved = nlohmann::json::parse(std::ifstream(plan));
  EXPECT_EQ(saved["pipeline"]["etp"], 2);
  bool by_width = false;
  for (const auto& d : saved["pipeline"]["segment_plans"])
    by_width |= d.get<std::string>().find("experts split by width") != std::string::npos;
  EXPECT_TRUE(by_width);
  const auto run = run_cli("run " + plan.string() + " --iterations 3 --check --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto r = nlohmann::json::parse(run.out);
  // float32 sums of the slices' partial outputs, in another order than one rank's: the losses
  // equal, the weights to 3e-5 (a relative 1.6e-4 at the smallest of them).
  EXPECT_LT(r["max_abs_diff_losses"].get<double>(), 1e-6);
  EXPECT_LT(r["max_abs_diff"].get<double>(), 1e-4);
  EXPECT_LT(r["max_rel_diff"].get<double>(), 1e-3);
  EXPECT_LT(r["losses"].back().get<double>(), r["losses"].front().get<double>());
  fs::remove(plan);
}
