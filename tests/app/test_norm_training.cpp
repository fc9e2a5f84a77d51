// The normalisation layers of tests/python/export_norms.py (nn.GroupNorm, nn.InstanceNorm2d,
// Llama's RMSNorm with and without a scale) train after import: each export plans data parallel
// on 2 CPU ranks, and 3 iterations equal one rank (--check) while the loss falls. The import's
// structure is tested in tests/core/test_onnx_norm_import.cpp; this is its numerics.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli_runner.h"
#include "training_check.h"

namespace fs = std::filesystem;

namespace {

const fs::path& norm_export_dir() {
  static const fs::path dir =
      fs::temp_directory_path() / ("unity-norms-" + std::to_string(getpid()));
  return dir;
}

class NormTraining : public ::testing::TestWithParam<std::string> {
 protected:
  static void TearDownTestSuite() { fs::remove_all(norm_export_dir()); }
};

TEST_P(NormTraining, DataParallelOnTwoRanksEqualsOneRank) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch";
  const std::string model = GetParam();
  const fs::path onnx = norm_export_dir() / (model + ".onnx");
  if (!fs::exists(onnx)) {
    const fs::path script = fs::path(UNITY_SOURCE_DIR) / "tests" / "python" / "export_norms.py";
    const std::string command = "/usr/bin/python3 '" + script.string() + "' '" +
                                norm_export_dir().string() + "' --only " + model + " >/dev/null";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }
  const fs::path json = norm_export_dir() / (model + ".json");
  const auto imported = run_cli("import " + onnx.string() + " --batch 4 -o " + json.string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  expect_trains_like_one_rank(json, norm_export_dir() / (model + ".plan.json"));
}

INSTANTIATE_TEST_SUITE_P(TorchExports, NormTraining,
                         ::testing::Values("groupnorm_cnn", "instancenorm_cnn", "rmsnorm_mlp",
                                           "rmsnorm_div"),
                         model_name);

}  // namespace
