// A classifier that takes uint8 images and scales them itself (tests/data/onnx/
// uint8_image_classifier.onnx, from make_small_models.py: image.float() / 255). Before, its UINT8
// input was refused ("type not held"); now the input is a uint8 tensor (held as int64 by the
// executor), the Cast makes it float, and the model plans and trains on 2 ranks like one.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "training_check.h"

namespace fs = std::filesystem;

namespace {

fs::path uint8_scratch(const std::string& name) { return scratch_file("uint8", name); }

TEST(IntegerInputsTraining, AUint8ImageInputImportsAndTrainsOnTwoRanksAsOnOne) {
  const fs::path onnx =
      fs::path(UNITY_SOURCE_DIR) / "tests" / "data" / "onnx" / "uint8_image_classifier.onnx";
  const fs::path json = uint8_scratch("classifier.json");
  const auto imported = run_cli("import " + onnx.string() + " -o " + json.string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_NE(imported.err.find("269 parameters"), std::string::npos)
      << imported.err;  // 8x3x9+8, 8x5+5
  std::ifstream in(json);
  const auto model = nlohmann::json::parse(in);
  int uint8_inputs = 0;
  for (const auto& n : model["nodes"])
    if (n["op"] == "Input" && n["attrs"].value("dtype", "") == "uint8") ++uint8_inputs;
  EXPECT_EQ(uint8_inputs, 1);
  expect_trains_like_one_rank(json, uint8_scratch("data_parallel.plan.json"));
  expect_joint_plan_trains_like_one_rank(json, uint8_scratch("joint.plan.json"));
  fs::remove_all(uint8_scratch("").parent_path());
}

}  // namespace
