// A super-resolution network (ESPCN) exported from PyTorch (tests/data/onnx/pixel_shuffle.onnx and
// lrn_espcn.onnx, from make_small_models.py): PixelUnshuffle, PixelShuffle (ONNX DepthToSpace,
// CRD), a tiled skip (Tile), torch.triu (Trilu) and, in the second, an ONNX LRN node. Each imports
// into Reshape/Transpose/Expand and the Trilu and LRN operators, plans jointly and runs that plan,
// and trains: data parallel on 2 CPU ranks equals one rank (--check) while the loss falls.
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

fs::path layout_scratch(const std::string& name) { return scratch_file("layouts", name); }

class LayoutTraining : public ::testing::TestWithParam<std::string> {
 protected:
  static void TearDownTestSuite() { fs::remove_all(layout_scratch("").parent_path()); }
};

TEST_P(LayoutTraining, SuperResolutionTrainsOnTwoRanksLikeOne) {
  const std::string model = GetParam();
  const fs::path onnx = fs::path(UNITY_SOURCE_DIR) / "tests" / "data" / "onnx" / (model + ".onnx");
  const fs::path json = layout_scratch(model + ".json");
  const auto imported = run_cli("import " + onnx.string() + " --loss mse -o " + json.string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  auto ops = operator_counts(json);
  // PixelUnshuffle's and DepthToSpace's transposes; the tile's Expand; one Trilu; the LRN.
  EXPECT_EQ(ops["Transpose"], 2);
  EXPECT_GE(ops["Expand"], 1);
  EXPECT_EQ(ops["Trilu"], 1);
  EXPECT_EQ(ops["LRN"], model == "lrn_espcn" ? 1 : 0);
  const auto joint = run_cli("optimize " + json.string() + " --machine cpu-local --gpus 2 --out " +
                             layout_scratch(model + ".joint.json").string());
  ASSERT_EQ(joint.exit_code, 0) << joint.err;
  // The joint plan runs too, equal to one rank.
  const auto run = run_cli("run " + layout_scratch(model + ".joint.json").string() +
                           " --iterations 2 --check --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_LT(nlohmann::json::parse(run.out)["max_rel_diff"].get<double>(), 1e-4);
  expect_trains_like_one_rank(json, layout_scratch(model + ".plan.json"));
}

INSTANTIATE_TEST_SUITE_P(Exports, LayoutTraining, ::testing::Values("pixel_shuffle", "lrn_espcn"),
                         model_name);

}  // namespace
