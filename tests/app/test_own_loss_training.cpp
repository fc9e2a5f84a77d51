// Training exports that end in their own loss (tests/data/onnx/cnn_own_loss.onnx and
// mlp_own_loss.onnx, from make_small_models.py): torch's cross_entropy with ignore_index, which
// exports as SoftmaxCrossEntropyLoss, and a mean squared error written out. Each output is one 0-d
// value: Unity attaches no loss, trains that value, and a plan over 2 CPU ranks, whose devices
// each sum part of the batch, equals one rank.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "training_check.h"

namespace fs = std::filesystem;

namespace {

fs::path own_loss_scratch(const std::string& name) { return scratch_file("own-loss", name); }

fs::path export_path(const std::string& model) {
  return fs::path(UNITY_SOURCE_DIR) / "tests" / "data" / "onnx" / (model + ".onnx");
}

class OwnLossTraining : public ::testing::TestWithParam<std::string> {
 protected:
  static void TearDownTestSuite() { fs::remove_all(own_loss_scratch("").parent_path()); }
};

TEST_P(OwnLossTraining, TrainsItsOwnLossOnTwoRanksLikeOne) {
  const std::string model = GetParam();
  const fs::path json = own_loss_scratch(model + ".json");
  const auto imported = run_cli("import " + export_path(model).string() + " -o " + json.string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_EQ(imported.err.find("attached"), std::string::npos) << imported.err;
  EXPECT_NE(imported.err.find("ends in its own loss: output '/"), std::string::npos)
      << imported.err;
  auto ops = operator_counts(json);
  EXPECT_EQ(ops["SoftmaxCrossEntropy"] + ops["MSELoss"], 0);
  EXPECT_EQ(ops["Input"], 2);  // the model's own: no labels or targets synthesised beside them
  for (const std::string mode : {"joint", "expert"}) {
    const fs::path plan = own_loss_scratch(model + "." + mode + ".json");
    const auto planned = run_cli("optimize " + json.string() + " --machine cpu-local --gpus 2 " +
                                 "--mode " + mode + " --out " + plan.string());
    ASSERT_EQ(planned.exit_code, 0) << planned.err;
    const auto run = run_cli("run " + plan.string() + " --iterations 2 --check --json");
    ASSERT_EQ(run.exit_code, 0) << mode << ": " << run.err;
    EXPECT_LT(nlohmann::json::parse(run.out)["max_rel_diff"].get<double>(), 1e-4) << mode;
  }
  expect_trains_like_one_rank(json, own_loss_scratch(model + ".plan.json"));
}

TEST(OwnLossTraining, AskingForAnotherLossIsRefused) {
  const auto imported = run_cli("import " + export_path("mlp_own_loss").string() +
                                " --loss mse -o " + own_loss_scratch("refused.json").string());
  EXPECT_EQ(imported.exit_code, 1);
  EXPECT_NE(imported.err.find("has a loss already"), std::string::npos) << imported.err;
  EXPECT_FALSE(fs::exists(own_loss_scratch("refused.json")));
  fs::remove_all(own_loss_scratch("").parent_path());
}

INSTANTIATE_TEST_SUITE_P(Exports, OwnLossTraining,
                         ::testing::Values("cnn_own_loss", "mlp_own_loss"), model_name);

}  // namespace
