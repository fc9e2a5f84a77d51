// `unity run` and `unity calibrate` through the built binary: JSON fields of DESIGN.md, --check,
// bad input with exit code 1 and nothing written, faults with the rank named.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "../../app/cli_runner.h"

namespace fs = std::filesystem;

namespace {

struct Scratch {
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "unity-run-cli-XXXXXX").string();
    path = mkdtemp(pattern.data());
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  fs::path path;
};

}  // namespace

TEST(RunCli, OneRankJsonHasTheDesignFields) {
  const CliResult r = run_cli("run mnist-mlp --iterations 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* field : {"backend", "ranks", "iterations", "measured_iteration_ms",
                            "predicted_iteration_ms", "losses"})
    EXPECT_TRUE(j.contains(field)) << field;
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["ranks"], 1);
  EXPECT_EQ(j["losses"].size(), 3u);
  EXPECT_GT(j["measured_iteration_ms"].get<double>(), 0);
  EXPECT_GT(j["predicted_iteration_ms"].get<double>(), 0);
  // Progress per iteration on stderr.
  EXPECT_NE(r.err.find("iteration   3/3"), std::string::npos) << r.err;
}

TEST(RunCli, TwoRankPlanWithCheckMatchesTheReference) {
  if (!has_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  Scratch s;
  const std::string plan = s.file("plan.json");
  ASSERT_EQ(run_cli("optimize mnist-mlp --machine cpu-local --gpus 2 --mode joint --out " + plan)
                .exit_code,
            0);
  const CliResult r = run_cli("run " + plan + " --iterations 4 --check --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ranks"], 2);
  ASSERT_TRUE(j.contains("max_abs_diff"));
  EXPECT_LT(j["max_abs_diff"].get<double>(), 1e-5);
  EXPECT_LT(j["max_rel_diff"].get<double>(), 1e-4);
  EXPECT_EQ(j["reference_losses"].size(), 4u);
}

TEST(RunCli, ScaledModelPlannedAndRun) {
  const CliResult r = run_cli("run resnext50 --scale 0.0625 --batch 4 --iterations 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"], "resnext50@0.0625");
  EXPECT_EQ(j["losses"].size(), 2u);
  // A model that cannot be scaled still takes --batch (the global batch).
  const CliResult inception = run_cli("run inception-v3 --batch 1 --iterations 1 --json");
  ASSERT_EQ(inception.exit_code, 0) << inception.err;
  EXPECT_EQ(nlohmann::json::parse(inception.out)["model"], "inception-v3");
  // Every mode of `unity optimize`, the expert plans included.
  const CliResult bert =
      run_cli("run bert-large --scale 0.0625 --batch 4 --mode expert --iterations 1 --json");
  ASSERT_EQ(bert.exit_code, 0) << bert.err;
  EXPECT_EQ(nlohmann::json::parse(bert.out)["mode"], "expert");
}

TEST(RunCli, BadInputExitsWithOneAndAMessage) {
  Scratch s;
  const CliResult missing = run_cli("run no-such-model");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no-such-model"), std::string::npos) << missing.err;
  const CliResult scale = run_cli("run inception-v3 --scale 0.5");
  EXPECT_EQ(scale.exit_code, 1);
  EXPECT_NE(scale.err.find("--scale works for"), std::string::npos) << scale.err;
  const std::string plan = s.file("plan.json");
  ASSERT_EQ(run_cli("optimize mnist-mlp --machine cpu-local --gpus 2 --out " + plan).exit_code, 0);
  const CliResult too_many = run_cli("run " + plan + " --ranks 4");
  EXPECT_EQ(too_many.exit_code, 1);
  EXPECT_NE(too_many.err.find("the plan uses 2 devices"), std::string::npos) << too_many.err;
  const CliResult no_mpirun = run_cli("run " + plan + " --mpirun /nonexistent/mpirun");
  EXPECT_EQ(no_mpirun.exit_code, 1);
  EXPECT_NE(no_mpirun.err.find("/nonexistent/mpirun not found"), std::string::npos)
      << no_mpirun.err;
}

TEST(RunCli, ADyingRankEndsTheRunWithItsNameAndExitCodeOne) {
  if (!has_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  Scratch s;
  const std::string plan = s.file("plan.json");
  ASSERT_EQ(run_cli("optimize mnist-mlp --machine cpu-local --gpus 2 --out " + plan).exit_code, 0);
  const CliResult r = run_cli("run " + plan + " --iterations 5 --inject-fault die@1:1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("rank 1 died during iteration 2"), std::string::npos) << r.err;
}

TEST(CalibrateCli, WritesAMachineFileThatOptimizeAccepts) {
  Scratch s;
  const std::string machine = s.file("cal.json");
  const CliResult r =
      run_cli("calibrate --backend cpu --seconds 0.05 --out " + machine + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["calibration"]["gemm_flops"].get<double>(), 1e8);
  EXPECT_GT(j["calibration"]["memory_bandwidth"].get<double>(), 1e8);
  const CliResult o = run_cli("optimize mnist-mlp --machine " + machine + " --gpus 1 --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_GT(nlohmann::json::parse(o.out)["iteration_time_ms"].get<double>(), 0);
  const CliResult bad = run_cli("calibrate --backend cuda --out " + s.file("never.json"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_FALSE(fs::exists(s.file("never.json")));
}
