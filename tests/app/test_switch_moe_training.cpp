// A GShard/Switch-style mixture of experts as PyTorch exports it (tests/data/onnx/switch_moe.onnx,
// from make_small_models.py): top-2 routing with a capacity per expert, each token's place in its
// expert's buffer counted by a CumSum over the batch's tokens, dispatch and combine as one-hot
// masks applied by einsum. The k-th expert of each token (`chosen[:, i]`, a Gather of an integer
// activation by a constant index) was refused at import. The capacity is counted over the whole
// batch, so data-parallel copies would change which tokens are kept: that plan is refused, naming
// the CumSum, and the joint plan trains on 2 ranks like one.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_runner.h"
#include "training_check.h"

namespace fs = std::filesystem;

namespace {

fs::path switch_scratch(const std::string& name) { return scratch_file("switch-moe", name); }

TEST(SwitchMoeTraining, ImportsRefusesToSplitItsCapacityAndTrainsJointlyLikeOneRank) {
  const fs::path onnx = fs::path(UNITY_SOURCE_DIR) / "tests" / "data" / "onnx" / "switch_moe.onnx";
  const fs::path json = switch_scratch("switch.json");
  const auto imported = run_cli("import " + onnx.string() + " -o " + json.string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  auto ops = operator_counts(json);
  EXPECT_EQ(ops["TopK"], 1);
  EXPECT_EQ(ops["CumSum"], 2);  // one per routed expert of a token
  EXPECT_EQ(ops["OneHot"], 4);
  const auto split = run_cli("optimize " + json.string() +
                             " --machine cpu-local --gpus 2 --mode data-parallel --out " +
                             switch_scratch("dp.plan.json").string());
  EXPECT_EQ(split.exit_code, 1);
  EXPECT_NE(split.err.find("CumSum"), std::string::npos) << split.err;
  expect_joint_plan_trains_like_one_rank(json, switch_scratch("joint.plan.json"));
  fs::remove_all(switch_scratch("").parent_path());
}

}  // namespace
