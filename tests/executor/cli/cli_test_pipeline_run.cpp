// `unity run` of pipelined plans through the built binary and mpirun: the runs (2 stages x
// 2 copies of gpt-tiny on 4 CPU ranks, with and without recomputation, ZeRO 1 and 3, interleaved)
// equal to one rank, the measured stages and memory in --json, the Chrome trace, and a rank killed
// mid-pipeline named with its stage.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "../../app/cli_runner.h"

namespace fs = std::filesystem;

namespace {

const std::string kRun =
    "run gpt-tiny --ranks 4 --mode expert --tp 1 --pp 2 --micro-batches 4 --check --json "
    "--iterations 4";

nlohmann::json run_json(const std::string& extra) {
  const CliResult r = run_cli(kRun + " " + extra);
  EXPECT_EQ(r.exit_code, 0) << extra << "\n" << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

TEST(PipelineRunCli, TwoStagesTimesTwoCopiesTrainEqualToOneRank) {
  if (!has_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  const auto j = run_json("");
  ASSERT_TRUE(j.contains("max_rel_diff"));
  // Adam magnifies the order of the micro-batches' sums where a gradient is nearly zero
  // (tests/executor/test_pipeline_training.cpp, kAdamTolerance): 2.5e-4 of a small weight's
  // largest element on an AMD EPYC, under 1e-4 in absolute terms.
  EXPECT_LT(j["max_rel_diff"].get<double>(), 1e-3);
  EXPECT_LT(j["max_abs_diff"].get<double>(), 1e-4);
  EXPECT_EQ(j["ranks"], 4);
  EXPECT_EQ(j["compute_dtype"], "float32");
  EXPECT_EQ(j["plan_dtype"], "float32");  // gpt-tiny is float16; a plan for CPU ranks is float32
  EXPECT_EQ(j["recompute"], "full");
  ASSERT_EQ(j["stages"].size(), 2u);
  for (const auto& s : j["stages"]) {
    EXPECT_GT(s["forward_ms"].get<double>(), 0);
    EXPECT_GT(s["backward_ms"].get<double>(), 0);
    EXPECT_GE(s["idle_ms"].get<double>(), 0);
    EXPECT_GT(s["forward_ms_predicted"].get<double>(), 0);
  }
  EXPECT_GT(j["bubble_fraction_measured"].get<double>(), 0);
  EXPECT_GT(j["bubble_fraction_predicted"].get<double>(), 0);
  ASSERT_EQ(j["peak_memory_bytes_measured"].size(), 4u);
  EXPECT_EQ(j["peak_memory_bytes_predicted"].size(), 2u);
  EXPECT_EQ(j["pipeline"]["timeline"]["boxes"].size(), 2u * 4u * 2u);
}

// --profile: each operator measured on its stage and predicted as its segment kind is costed,
// the forward twice where full recomputation re-runs it; the predictions of a stage's operators add
// up to the stage's predicted forward and backward time, one stage at a time.
TEST(PipelineRunCli, ProfiledOperatorsAddUpToTheirStagesPredictions) {
  if (!has_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  const CliResult r = run_cli(
      "run gpt-tiny --ranks 2 --mode expert --tp 1 --pp 2 --micro-batches 4 --iterations 1 "
      "--profile --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // Stage 0 holds the embedding and layer 0; stage 1 layer 1, the final norm, the head and the
  // loss.
  double stage[2] = {0, 0};
  for (const auto& row : j["profile"]) {
    const std::string name = row["name"];
    ASSERT_TRUE(row.contains("predicted_ms")) << name;
    EXPECT_GT(row["forward_ms"].get<double>(), 0) << name;
    const bool first = name.rfind("embed", 0) == 0 || name.rfind("layers.0.", 0) == 0;
    stage[first ? 0 : 1] += row["predicted_ms"].get<double>();
  }
  ASSERT_EQ(j["stages"].size(), 2u);
  for (int s = 0; s < 2; ++s) {
    const auto& st = j["stages"][s];
    const double predicted =
        st["forward_ms_predicted"].get<double>() + st["backward_ms_predicted"].get<double>();
    EXPECT_NEAR(stage[s], predicted, 1e-9 * predicted) << "stage " << s;
  }
}

// --profile on tensor-parallel stages: every operator the segments run, under the names they run
// it by, in the order they run: each layer's collectives (Replicate before the attention, Reduce
// after it) with their communication predicted, and the vocabulary-parallel loss a substitution
// made (loss.loss2, its shares summed by loss.out), which the model's own names would miss.
TEST(PipelineRunCli, ProfileOfTensorParallelStagesListsTheirCollectivesAndTheirLoss) {
  if (!has_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  const CliResult r =
      run_cli("run gpt-tiny --ranks 2 --mode expert --tp 2 --pp 1 --iterations 1 --profile --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> names;
  std::map<std::string, std::string> op;
  for (const auto& row : j["profile"]) {
    const std::string name = row["name"];
    names.push_back(name);
    op[name] = row["op"];
    ASSERT_TRUE(row.contains("predicted_ms")) << name;
    EXPECT_GT(row["predicted_ms"].get<double>(), 0) << name;
  }
  const auto at = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) - names.begin();
  };
  for (const std::string layer : {"layers.0.", "layers.1."}) {
    EXPECT_EQ(op[layer + "attention.rx"], "Replicate");
    EXPECT_EQ(op[layer + "attention.out"], "Reduce");
    EXPECT_LT(at(layer + "attention.rx"), at(layer + "attention"));
    EXPECT_LT(at(layer + "attention"), at(layer + "attention.out"));
  }
  EXPECT_EQ(op["loss.loss2"], "SoftmaxCrossEntropy");
  EXPECT_EQ(op["loss.out"], "Reduce");
}

TEST(PipelineRunCli, RecomputationZeroAndInterleavingTrainEqualToOneRank) {
  if (!has_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  struct Case {
    std::string flags;
    double tolerance;
  };
  // Adam magnifies the different order of the sums where a gradient is nearly zero (with SGD the
  // run equals one rank to 2e-7), the more where ZeRO 3 reduce-scatters every micro-batch's
  // gradients: relative to a small weight's largest element, as above.
  for (const Case& c : {Case{"--recompute none", 1e-3}, Case{"--zero 1", 1e-3},
                        Case{"--zero 3", 1e-3}, Case{"--interleave 2 --layers 4", 1e-3}}) {
    const auto j = run_json(c.flags);
    ASSERT_TRUE(j.contains("max_rel_diff")) << c.flags;
    EXPECT_LT(j["max_rel_diff"].get<double>(), c.tolerance) << c.flags;
    EXPECT_LT(j["max_abs_diff"].get<double>(), 1e-4) << c.flags;
  }
  const auto sgd = run_json("--zero 3 --optimizer sgd");
  EXPECT_LT(sgd["max_rel_diff"].get<double>(), 1e-6);
  EXPECT_EQ(sgd["zero_stage"], 3);
}

TEST(PipelineRunCli, TraceIsAChromeTraceOfTheMeasuredIteration) {
  if (!has_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  const fs::path trace = fs::temp_directory_path() / "unity-pipeline-trace-test.json";
  fs::remove(trace);
  const CliResult r = run_cli(
      "run gpt-tiny --ranks 2 --mode expert --tp 1 --pp 2 --micro-batches 4 --iterations 2 "
      "--trace " +
      trace.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(trace);
  const auto j = nlohmann::json::parse(in);
  int boxes = 0;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "X") ++boxes;
  EXPECT_EQ(boxes, 2 * 4 * 2);
  EXPECT_TRUE(j.at("otherData").at("measured").get<bool>());
  fs::remove(trace);
}

TEST(PipelineRunCli, ARankKilledMidPipelineIsNamedWithItsStage) {
  if (!has_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  const CliResult r = run_cli(
      "run gpt-tiny --ranks 4 --mode expert --tp 1 --pp 2 --micro-batches 4 --iterations 4 "
      "--timeout 20 --inject-fault die@2:1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("rank 2 (pipeline stage 1)"), std::string::npos) << r.err;
}

// The CPU backend computes in float32, so a half-precision model is planned for CPU ranks in
// float32 (plan_optimizer.cpp): the plan's memory, traffic and times are those of the run, and
// there is no precision to explain.
TEST(PipelineRunCli, AHalfPrecisionModelIsPlannedForCpuRanksInFloat32) {
  const CliResult r = run_cli("run gpt-tiny --mode data-parallel --iterations 2 --check --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["plan_dtype"], "float32");
  EXPECT_EQ(j["compute_dtype"], "float32");
  EXPECT_LT(j["max_rel_diff"].get<double>(), 1e-6);  // one rank against one rank
  const CliResult text = run_cli("run gpt-tiny --mode data-parallel --iterations 1");
  EXPECT_EQ(text.out.find("plan ran in float32"), std::string::npos) << text.out;
  // Planned for GPUs, the same model keeps its dtype.
  const CliResult gpu = run_cli("optimize gpt-tiny --machine dgx-a100 --gpus 2 --json");
  ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
  EXPECT_EQ(nlohmann::json::parse(gpu.out)["dtype"], "float16");
}

// Two GPUs (one NCCL rank each): 2 stages, activations and gradients through host memory and MPI.
TEST(PipelineRunCli, TwoStagesOnTwoGpusEqualOneRank) {
  if (!has_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  const CliResult gpus = run_cli("run gpt-tiny --backend cuda --iterations 1");
  if (gpus.exit_code != 0) GTEST_SKIP() << "needs the cuda backend: " << gpus.err;
  if (std::system("test \"$(nvidia-smi -L 2>/dev/null | wc -l)\" -ge 2") != 0)
    GTEST_SKIP() << "needs two GPUs";
  const CliResult r = run_cli(
      "run gpt-tiny --backend cuda --ranks 2 --mode expert --tp 1 --pp 2 --micro-batches 4 "
      "--iterations 4 --check --json --optimizer sgd");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_LT(j["max_rel_diff"].get<double>(), 1e-3);
}

TEST(PipelineRunCli, TensorParallelStagesTrainEqualToOneRank) {
  if (!has_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  const CliResult r = run_cli(
      "run gpt-tiny --ranks 4 --mode expert --tp 2 --pp 2 --micro-batches 4 --iterations 3 "
      "--check --json --optimizer sgd");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_LT(j["max_rel_diff"].get<double>(), 1e-5);
  EXPECT_EQ(j["stages"].size(), 2u);
}

TEST(PipelineRunCli, APlanNeedsOneRankPerDevice) {
  const fs::path plan = fs::temp_directory_path() / "unity-pipeline-ranks-test.json";
  ASSERT_EQ(run_cli("optimize gpt-tiny --machine cpu-local --gpus 4 --mode expert --tp 1 --pp 2 "
                    "--micro-batches 4 --out " +
                    plan.string())
                .exit_code,
            0);
  const CliResult r = run_cli("run " + plan.string() + " --ranks 2 --iterations 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("one rank per device"), std::string::npos) << r.err;
  fs::remove(plan);
}

}  // namespace
