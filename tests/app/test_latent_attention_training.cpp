// deepseek-tiny (three layers of multi-head latent attention, a dense first layer, then 4 experts
// of 32, top 2, and a shared one) trained with Megatron's tensor parallelism over 2 CPU ranks
// (`--tp 2`: each rank runs half the heads of every latent attention, with the down projections
// and their norms whole, and the partial outputs summed), equal to one rank (--check) while the
// loss falls.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace fs = std::filesystem;

TEST(LatentAttentionTraining, HeadsSplitOverTwoRanksTrainLikeOne) {
  const fs::path plan =
      fs::temp_directory_path() / ("unity-mla-" + std::to_string(getpid()) + ".plan.json");
  const auto planned = run_cli(
      "optimize deepseek-tiny --machine cpu-local --gpus 2 --tp 2 --pp 1 --mode expert --json "
      "--out " +
      plan.string());
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  // The replica's plan splits each latent attention by heads over its two devices.
  const auto saved = nlohmann::json::parse(std::ifstream(plan));
  int split = 0;
  for (const auto& kind : saved["pipeline"]["kind_plans"])
    for (const auto& n : kind["pcg"]["nodes"])
      if (n["op"] == "LatentAttention" && n["outputs"][0]["replica"].get<int>() == 2) ++split;
  EXPECT_GT(split, 0);
  // SGD: with it the weights agree to 1e-7 of their size. Adam divides each gradient by its own
  // running size, so an element whose gradient is float noise moves by a whole step either way,
  // and the two summation orders then leave weights 2e-4 of their size apart (moe-tiny's, with
  // Adam, 4e-5).
  const auto run =
      run_cli("run " + plan.string() + " --iterations 3 --optimizer sgd --check --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto r = nlohmann::json::parse(run.out);
  EXPECT_EQ(r["ranks"], 2);
  EXPECT_LT(r["max_rel_diff"].get<double>(), 1e-5);
  EXPECT_LT(r["losses"].back().get<double>(), r["losses"].front().get<double>());
  fs::remove(plan);
}
