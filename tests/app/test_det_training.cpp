// A flow-style layer (tests/data/onnx/det_flow.onnx, from make_small_models.py): torch.det of a
// matrix per sample exports ONNX's Det, which imports as the Det operator; the identity added to
// each matrix stays a Constant. Each matrix is one slice of Det's layout, so the samples split:
// the model plans jointly and data-parallel on 2 CPU ranks and trains equal to one rank.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_runner.h"
#include "training_check.h"

namespace fs = std::filesystem;

namespace {

fs::path det_scratch(const std::string& name) { return scratch_file("det", name); }

TEST(DetTraining, ALogVolumeOfAMatrixPerSampleTrainsOnTwoRanksAsOnOne) {
  const fs::path onnx = fs::path(UNITY_SOURCE_DIR) / "tests" / "data" / "onnx" / "det_flow.onnx";
  const fs::path json = det_scratch("det_flow.json");
  const auto imported = run_cli("import " + onnx.string() + " -o " + json.string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  // 6 x 9 + 9 and 7 x 2 + 2; the identity is a Constant.
  EXPECT_NE(imported.err.find("79 parameters"), std::string::npos) << imported.err;
  auto ops = operator_counts(json);
  EXPECT_EQ(ops["Det"], 1);
  EXPECT_EQ(ops["Constant"], 1);
  expect_trains_like_one_rank(json, det_scratch("data_parallel.plan.json"));
  expect_joint_plan_trains_like_one_rank(json, det_scratch("joint.plan.json"));
  fs::remove_all(det_scratch("").parent_path());
}

}  // namespace
