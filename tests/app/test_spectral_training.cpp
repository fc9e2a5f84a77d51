// An audio classifier on a spectral front end (tests/data/onnx/spectral_classifier.onnx, from
// make_small_models.py): STFT of the wave with a Hann window, log power, a Linear per frame, a DFT
// over time, a Gemm to the classes. STFT imports as one 1-D convolution and DFT as one MatMul,
// each with a Constant matrix (core/src/onnx/onnx_ops_spectral.cpp) that keeps its values and is
// not trained: the model's parameters are its two layers only. It plans jointly and data-parallel
// and trains on 2 CPU ranks equal to one rank, the gradient reaching the frame layer through the
// DFT's product.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "training_check.h"

namespace fs = std::filesystem;

namespace {

fs::path spectral_scratch(const std::string& name) { return scratch_file("spectral", name); }

TEST(SpectralTraining, StftAndDftImportAsProductsWithConstantsAndTrainOnTwoRanksLikeOne) {
  const fs::path onnx =
      fs::path(UNITY_SOURCE_DIR) / "tests" / "data" / "onnx" / "spectral_classifier.onnx";
  const fs::path json = spectral_scratch("spectral.json");
  const auto imported =
      run_cli("import " + onnx.string() + " --loss cross-entropy -o " + json.string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  // 33 x 16 + 16 + 4 x 16 + 4: the layers; the 2 x 33 STFT kernels of 64 taps and the DFT's
  // [29, 2 x 15] matrix are held, not trained.
  EXPECT_NE(imported.err.find("612 parameters (2 constants of 5094 values kept as they are)"),
            std::string::npos)
      << imported.err;
  auto ops = operator_counts(json);
  EXPECT_EQ(ops["Conv2D"], 1);    // the STFT
  EXPECT_EQ(ops["MatMul"], 1);    // the DFT
  EXPECT_EQ(ops["Linear"], 2);    // the frame layer and the classes
  EXPECT_EQ(ops["Constant"], 2);  // their matrices
  EXPECT_EQ(ops["Weight"], 4);
  expect_joint_plan_trains_like_one_rank(json, spectral_scratch("spectral.joint.json"));
  expect_trains_like_one_rank(json, spectral_scratch("spectral.plan.json"));
  fs::remove_all(spectral_scratch("").parent_path());
}

}  // namespace
