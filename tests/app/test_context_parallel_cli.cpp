// `unity optimize --cp` and `unity run` of its plan: a small decoder's sequence split over CPU
// ranks, the plan reporting the split and its key/value traffic (computed by hand), and the run
// (alone, with 2 copies, with --tp 2, with --pp 2) training equal to one rank (--check) with its
// measured time beside the predicted one; what the executor does not split by sequence named.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace fs = std::filesystem;

namespace {

fs::path plan_path(const std::string& tag) {
  return fs::temp_directory_path() /
         ("unity-cp-" + tag + "-" + std::to_string(getpid()) + ".plan.json");
}

// Runs the plan with --check and returns its --json report (SGD: the sums over the shards differ
// from one rank's only in order, so the weights agree to 1e-6 of their size).
nlohmann::json checked_run(const fs::path& plan, int ranks) {
  const auto run =
      run_cli("run " + plan.string() + " --iterations 3 --optimizer sgd --check --json");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  if (run.exit_code != 0) return nlohmann::json::object();
  const auto r = nlohmann::json::parse(run.out);
  EXPECT_EQ(r["ranks"], ranks);
  EXPECT_LT(r["max_rel_diff"].get<double>(), 1e-5);
  EXPECT_LT(r["losses"].back().get<double>(), r["losses"].front().get<double>());
  EXPECT_GT(r["measured_iteration_ms"].get<double>(), 0);
  EXPECT_GT(r["predicted_iteration_ms"].get<double>(), 0);
  return r;
}

}  // namespace

TEST(ContextParallelCli, OptimizeReportsTheSplitAndRunTrainsIt) {
  if (!has_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  const fs::path plan = plan_path("dp");
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
  // 2 copies of 2 sequence shards: 4 ranks, the copies summing their gradients.
  checked_run(plan, 4);
  // The text report prints the measured iteration beside the predicted one.
  const auto text = run_cli("run " + plan.string() + " --iterations 2 --optimizer sgd");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("predicted"), std::string::npos) << text.out;
  const auto bad = run_cli("optimize llama-tiny --machine cpu-local --gpus 4 --cp 3 --mode expert");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("2 x 3 chunks"), std::string::npos) << bad.err;
  fs::remove(plan);
}

TEST(ContextParallelCli, SequenceShardsAloneWithTensorAndWithPipelineParallelismTrainLikeOneRank) {
  if (!has_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  struct Case {
    std::string tag, layout;
    int ranks;
  };
  for (const Case& c : {Case{"cp", "--gpus 2 --tp 1 --pp 1 --cp 2", 2},
                        Case{"tp", "--gpus 4 --tp 2 --pp 1 --cp 2", 4},
                        Case{"pp", "--gpus 4 --tp 1 --pp 2 --cp 2 --micro-batches 4", 4}}) {
    SCOPED_TRACE(c.layout);
    const fs::path plan = plan_path(c.tag);
    const auto planned = run_cli("optimize llama-tiny --machine cpu-local " + c.layout +
                                 " --mode expert --json --out " + plan.string());
    ASSERT_EQ(planned.exit_code, 0) << planned.err;
    const auto j = nlohmann::json::parse(planned.out);
    EXPECT_EQ(j["cp"], 2);
    const auto r = checked_run(plan, c.ranks);
    fs::remove(plan);
  }
}

// DeepSeek's latent attention compresses the keys and values of the whole sequence: the executor
// does not split it by sequence, and says so instead of running something else.
TEST(ContextParallelCli, RunRefusesLatentAttentionSplitBySequence) {
  const fs::path plan = plan_path("mla");
  const auto planned = run_cli(
      "optimize deepseek-tiny --machine cpu-local --gpus 2 --tp 1 --pp 1 --cp 2 --mode expert "
      "--out " +
      plan.string());
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  const auto run = run_cli("run " + plan.string() + " --iterations 1");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("LatentAttention"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("--cp 1"), std::string::npos) << run.err;
  fs::remove(plan);
}
