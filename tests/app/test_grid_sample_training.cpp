// A warp as optical-flow and spatial-transformer networks train one (tests/data/onnx/
// grid_sample_warp.onnx, from make_small_models.py): a convolution predicts a displacement per
// pixel and torch's grid_sample (bilinear, border padding) resamples the image there. The
// GridSample node imports as the operators it is made of (core/src/onnx/onnx_ops_grid_sample.cpp:
// four GatherElements of the flattened image, their bilinear weights), plans jointly, and trains
// on 2 CPU ranks equal to one rank, the gradient reaching the flow's convolution through the
// weights.
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

fs::path warp_scratch(const std::string& name) { return scratch_file("grid-sample", name); }

TEST(GridSampleTraining, AFlowWarpImportsAsGathersAndTrainsOnTwoRanksLikeOne) {
  const fs::path onnx =
      fs::path(UNITY_SOURCE_DIR) / "tests" / "data" / "onnx" / "grid_sample_warp.onnx";
  const fs::path json = warp_scratch("warp.json");
  const auto imported = run_cli("import " + onnx.string() + " --loss mse -o " + json.string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  auto ops = operator_counts(json);
  EXPECT_EQ(ops["GatherElements"], 4);  // the four bilinear corners
  EXPECT_EQ(ops["Floor"], 2);           // x and y
  EXPECT_EQ(ops["Conv2D"], 2);
  expect_joint_plan_trains_like_one_rank(json, warp_scratch("warp.joint.json"));
  expect_trains_like_one_rank(json, warp_scratch("warp.plan.json"));
  fs::remove_all(warp_scratch("").parent_path());
}

TEST(GridSampleTraining, AnIdentityGridBufferNamedConstantKeepsItsValuesAndIsNotTrained) {
  // The warp's identity grid is a registered buffer: an initializer, as the convolutions'
  // parameters are, so by default a trained Weight (296 parameters). --constant names it a
  // buffer: a Constant of its 128 values, 168 parameters, and the model still trains like one rank.
  const fs::path onnx =
      fs::path(UNITY_SOURCE_DIR) / "tests" / "data" / "onnx" / "grid_sample_warp.onnx";
  const fs::path json = warp_scratch("warp-buffer.json");
  const auto imported =
      run_cli("import " + onnx.string() + " --loss mse --constant 'ident*' -o " + json.string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_NE(imported.err.find("168 parameters (1 constants of 128 values kept as they are)"),
            std::string::npos)
      << imported.err;
  std::ifstream in(json);
  const auto model = nlohmann::json::parse(in);
  int constants = 0;
  for (const auto& n : model["nodes"])
    if (n["op"] == "Constant") {
      ++constants;
      EXPECT_EQ(n["name"], "identity");
      EXPECT_EQ(n["values"]["type"], "float32");
    }
  EXPECT_EQ(constants, 1);
  expect_trains_like_one_rank(json, warp_scratch("warp-buffer.plan.json"));
  // A pattern that names no initializer is refused, and nothing is written.
  const fs::path none = warp_scratch("none.json");
  const auto refused =
      run_cli("import " + onnx.string() + " --constant rotary -o " + none.string());
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("constant initializer 'rotary' matches no initializer of the model "
                             "(identity, flow.weight, flow.bias, head.weight, head.bias)"),
            std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(none));
  fs::remove_all(warp_scratch("").parent_path());
}

}  // namespace
