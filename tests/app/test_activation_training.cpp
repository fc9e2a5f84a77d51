// torch.nn's activations, as torch exports them (tests/data/onnx/activations.onnx, from
// make_small_models.py), import as the point-wise operators of core/src/ops/, plan jointly, and
// train: data parallel on 2 CPU ranks equals one rank (--check) while the loss falls.
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

fs::path scratch(const std::string& name) { return scratch_file("activations", name); }

TEST(ActivationTraining, TorchActivationsImportAsTheirOwnOperatorsAndTrainOnTwoRanks) {
  const fs::path onnx = fs::path(UNITY_SOURCE_DIR) / "tests" / "data" / "onnx" / "activations.onnx";
  const fs::path json = scratch("activations.json");
  const auto imported = run_cli("import " + onnx.string() + " --batch 8 -o " + json.string());
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  auto ops = operator_counts(json);
  // One node each; Mish is exported as Softplus, Tanh and Mul, Softsign as Abs, Add and Div.
  for (const char* op :
       {"LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Sin", "Abs"})
    EXPECT_EQ(ops[op], 1) << op;
  EXPECT_EQ(ops["Softplus"], 2);
  // The joint search splits them like any element-wise operator: it finds a plan.
  const auto joint = run_cli("optimize " + json.string() + " --machine cpu-local --gpus 2 --out " +
                             scratch("joint.json").string());
  ASSERT_EQ(joint.exit_code, 0) << joint.err;
  expect_trains_like_one_rank(json, scratch("activations.plan.json"));
  fs::remove_all(json.parent_path());
}

}  // namespace
