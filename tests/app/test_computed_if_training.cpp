// An If whose condition is computed from the activations (tests/data/onnx/computed_if.onnx, from
// make_small_models.py: if the sum of a layer's output is positive, relu, else 2 sigmoid): Unity
// imports both branches and selects with a Where (core/src/onnx/onnx_ops_control_flow.cpp). Under
// data parallelism the sum is over the whole batch (its partial sums are summed first), so the
// ranks take the branch one rank takes, and the model trains on 2 ranks like one.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_runner.h"
#include "training_check.h"

namespace fs = std::filesystem;

namespace {

fs::path if_scratch(const std::string& name) { return scratch_file("computed-if", name); }

TEST(ComputedIfTraining, BothBranchesRunAndAWhereSelectsOnTwoRanksLikeOne) {
  const fs::path onnx = fs::path(UNITY_SOURCE_DIR) / "tests" / "data" / "onnx" / "computed_if.onnx";
  const fs::path json = if_scratch("if.json");
  const auto imported = run_cli("import " + onnx.string() + " -o " + json.string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  auto ops = operator_counts(json);
  EXPECT_EQ(ops["Where"], 1);
  EXPECT_EQ(ops["Relu"], 1);     // the then branch
  EXPECT_EQ(ops["Sigmoid"], 1);  // the else branch
  EXPECT_EQ(ops["Compare"], 1);  // the condition
  expect_trains_like_one_rank(json, if_scratch("if.plan.json"));
  fs::remove_all(if_scratch("").parent_path());
}

}  // namespace
