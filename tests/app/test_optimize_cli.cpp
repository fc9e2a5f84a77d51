// `unity optimize` and `unity show PLAN`: the JSON contract of DESIGN.md and plan files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace fs = std::filesystem;

TEST(OptimizeCli, JsonHasTheContractFields) {
  auto r = run_cli("optimize mnist-mlp --machine summit --gpus 2 --mode data-parallel --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* field :
       {"model", "machine", "devices", "mode", "iteration_time_ms", "compute_ms",
        "communication_ms", "communication_bytes", "peak_memory_bytes", "fits_in_memory",
        "search_seconds", "candidates_evaluated", "substitutions_applied", "operators",
        "parallel_operators"})
    EXPECT_TRUE(j.contains(field)) << field;
  EXPECT_EQ(j["devices"], 2);
  EXPECT_EQ(j["communication_bytes"].get<double>(), 3252224.0);
  EXPECT_EQ(j["fits_in_memory"], true);
}

TEST(OptimizeCli, PlanFileShowsWithCosts) {
  const auto plan = fs::temp_directory_path() / (std::to_string(::getpid()) + "_plan.json");
  auto r = run_cli("optimize resnext50 --machine summit --nodes 2 --mode data-parallel --out " +
                   plan.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(slurp(plan));
  EXPECT_EQ(j["format"], "unity-plan");
  EXPECT_EQ(j["summary"]["devices"], 12);
  EXPECT_FALSE(j["operators"].empty());
  for (const auto& op : j["operators"]) {
    ASSERT_TRUE(op.contains("view"));
    EXPECT_TRUE(op.contains("forward_ms"));
  }
  auto show = run_cli("show " + plan.string() + " --costs");
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("backward ms"), std::string::npos);
  EXPECT_NE(show.out.find("conv1"), std::string::npos) << show.out.substr(0, 2000);
  fs::remove(plan);
}

TEST(OptimizeCli, MemoryVerdictAndBadInput) {
  auto dlrm = run_cli("optimize dlrm --machine summit --mode data-parallel --json");
  ASSERT_EQ(dlrm.exit_code, 0) << dlrm.err;
  EXPECT_EQ(nlohmann::json::parse(dlrm.out)["fits_in_memory"], false);

  const auto out = fs::temp_directory_path() / (std::to_string(::getpid()) + "_never.json");
  auto too_many = run_cli("optimize mnist-mlp --machine pcie-4gpu --gpus 8 --out " + out.string());
  EXPECT_EQ(too_many.exit_code, 1);
  EXPECT_FALSE(too_many.err.empty());
  EXPECT_FALSE(fs::exists(out));
  auto bad_mode = run_cli("optimize mnist-mlp --machine summit --mode telepathy");
  EXPECT_EQ(bad_mode.exit_code, 1);
  auto no_machine = run_cli("optimize mnist-mlp");
  EXPECT_EQ(no_machine.exit_code, 1);
}

// --head-dim beside --ffn and --kv-heads: heads of their own size plan, and a bad size exits 1
// with a message.
TEST(OptimizeCli, HeadDimResizesTheAttentionAndABadOneExitsOne) {
  auto wide = run_cli("optimize llama-tiny --machine cpu-local --gpus 2 --head-dim 32 --json");
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  auto plain = run_cli("optimize llama-tiny --machine cpu-local --gpus 2 --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto w = nlohmann::json::parse(wide.out);
  const auto p = nlohmann::json::parse(plain.out);
  EXPECT_NE(w["model"].get<std::string>().find("head_dim=32"), std::string::npos) << w["model"];
  // Heads of 32 instead of 16: more FLOPs in Megatron-LM's count.
  EXPECT_GT(w["model_flops_per_iteration"].get<double>(),
            p["model_flops_per_iteration"].get<double>());

  auto odd = run_cli("optimize llama-tiny --machine cpu-local --gpus 2 --head-dim 33");
  EXPECT_EQ(odd.exit_code, 1);
  EXPECT_NE(odd.err.find("--head-dim 33: must be even"), std::string::npos) << odd.err;
  auto negative = run_cli("optimize llama-tiny --machine cpu-local --gpus 2 --head-dim -8");
  EXPECT_EQ(negative.exit_code, 1);
  EXPECT_NE(negative.err.find("--head-dim: must be a positive whole number, got -8"),
            std::string::npos)
      << negative.err;
  auto not_family = run_cli("optimize mnist-mlp --machine cpu-local --gpus 2 --head-dim 32");
  EXPECT_EQ(not_family.exit_code, 1);
  EXPECT_FALSE(not_family.err.empty());
}
