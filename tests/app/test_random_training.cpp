// A variational autoencoder that returns its own loss (tests/data/onnx/vae_own_loss.onnx, from
// make_small_models.py): the reparameterisation's torch.randn_like exports RandomNormalLike, which
// imports as the Random operator. Its numbers are drawn by each element's index in the whole
// tensor, so the model trains data-parallel on 2 CPU ranks equal to one rank: a rank that drew
// its own numbers for its half of the batch would train another model.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "training_check.h"

namespace fs = std::filesystem;

namespace {

fs::path vae_scratch(const std::string& name) { return scratch_file("random", name); }

TEST(RandomTraining, AVaesReparameterisationDrawsAsOneRankDoesOnTwo) {
  const fs::path onnx =
      fs::path(UNITY_SOURCE_DIR) / "tests" / "data" / "onnx" / "vae_own_loss.onnx";
  const fs::path json = vae_scratch("vae.json");
  const auto imported = run_cli("import " + onnx.string() + " -o " + json.string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  // 32 x 24 + 24, 2 x (24 x 6 + 6), 6 x 24 + 24, 24 x 32 + 32.
  EXPECT_NE(imported.err.find("2060 parameters"), std::string::npos) << imported.err;
  EXPECT_NE(imported.err.find("ends in its own loss"), std::string::npos) << imported.err;
  auto ops = operator_counts(json);
  EXPECT_EQ(ops["Random"], 1);
  expect_trains_like_one_rank(json, vae_scratch("vae.plan.json"));
  fs::remove_all(vae_scratch("").parent_path());
}

}  // namespace
