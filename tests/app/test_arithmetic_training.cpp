// PyTorch's nn.PReLU, torch.maximum, torch.minimum and torch.pow with a computed exponent, as
// torch exports them (tests/data/onnx/arithmetic.onnx, from make_small_models.py), import as
// Arithmetic nodes, plan jointly, and train: data parallel on 2 CPU ranks equals one rank
// (--check) while the loss falls.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "training_check.h"

namespace fs = std::filesystem;

TEST(ArithmeticTraining, TorchPReluMaximumMinimumPowTrainOnTwoRanks) {
  const fs::path dir = fs::temp_directory_path() / ("unity-arithmetic-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path onnx = fs::path(UNITY_SOURCE_DIR) / "tests" / "data" / "onnx" / "arithmetic.onnx";
  const fs::path json = dir / "arithmetic.json";
  const auto imported = run_cli("import " + onnx.string() + " --batch 4 -o " + json.string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  std::map<std::string, int> functions;
  const auto model = nlohmann::json::parse(std::ifstream(json));
  for (const auto& n : model["nodes"])
    if (n["op"] == "Arithmetic") ++functions[n["attrs"]["function"].get<std::string>()];
  EXPECT_EQ(functions,
            (std::map<std::string, int>{{"max", 1}, {"min", 1}, {"pow", 1}, {"prelu", 1}}));
  const auto joint = run_cli("optimize " + json.string() + " --machine cpu-local --gpus 2 --out " +
                             (dir / "joint.json").string());
  ASSERT_EQ(joint.exit_code, 0) << joint.err;
  expect_trains_like_one_rank(json, dir / "arithmetic.plan.json");
  fs::remove_all(dir);
}
