// An attention mask computed from the inputs (tests/data/onnx/padding_mask_attention.onnx, from
// make_small_models.py): `ids != 0` hides the padding from every query by a masked fill of the
// scores and from the pooled sum by a float cast of the mask. It imports as the mask operators
// (Compare, Logical, Where, Cast), plans jointly, and trains: data parallel on 2 CPU ranks equals
// one rank (--check) while the loss falls.
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

fs::path mask_scratch(const std::string& name) { return scratch_file("masks", name); }

TEST(MaskTraining, APaddingMaskComputedFromTheIdsTrainsOnTwoRanksLikeOne) {
  const fs::path onnx =
      fs::path(UNITY_SOURCE_DIR) / "tests" / "data" / "onnx" / "padding_mask_attention.onnx";
  const fs::path json = mask_scratch("padding_mask_attention.json");
  const auto imported =
      run_cli("import " + onnx.string() + " --loss cross-entropy -o " + json.string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  std::map<std::string, int> ops;
  const auto model = nlohmann::json::parse(std::ifstream(json));
  for (const auto& n : model["nodes"]) {
    const std::string op = n["op"].get<std::string>();
    ++ops[op];
    // The masked fill's -inf is the largest float (a model file holds no infinities).
    if (op == "Where") {
      EXPECT_EQ(n["attrs"]["x"].get<double>(), -3.4028234663852886e38);
    }
  }
  // Equal then Not (`!=`), the Not of `~keep`; the fill; keep.float() (the Cast of `~keep` to bool
  // is the mask itself).
  EXPECT_EQ(ops["Compare"], 1);
  EXPECT_EQ(ops["Logical"], 2);
  EXPECT_EQ(ops["Where"], 1);
  EXPECT_EQ(ops["Cast"], 1);
  const auto joint = run_cli("optimize " + json.string() + " --machine cpu-local --gpus 2 --out " +
                             mask_scratch("joint.json").string());
  ASSERT_EQ(joint.exit_code, 0) << joint.err;
  expect_trains_like_one_rank(json, mask_scratch("padding_mask_attention.plan.json"));
  fs::remove_all(json.parent_path());
}

}  // namespace
