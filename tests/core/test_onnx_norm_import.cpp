// The normalisation layers users write, as torch.onnx.export writes them (tests/python/
// export_norms.py, made at test time when /usr/bin/python3 has torch, skipped otherwise), at
// opsets 13, 17 and 18 (a rewrite of the opset-17 file, see the script): nn.GroupNorm (Reshape,
// InstanceNormalization, Reshape, Mul, Add), nn.InstanceNorm2d, and Llama's RMSNorm in its rsqrt
// and its divide forms.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "onnx_test_files.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/onnx/onnx_import.h"
#include "unity/core/plan/plan_optimizer.h"

namespace unity {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kSummitBatch = 6;  // Summit's 6 GPUs per node

struct Exported {
  fs::path dir;
  std::map<std::string, std::int64_t> torch_parameters;  // what torch counts, by model
  std::string skip;                                      // why the test must skip
};

// Runs export_norms.py for one model into a scratch folder and reads torch's parameter count from
// its output.
Exported export_norms(int opset, const std::string& model) {
  Exported e;
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    e.skip = "/usr/bin/python3 cannot import torch";
    return e;
  }
  e.dir = onnx_test::scratch_dir("unity_onnx_norm_test_") / std::to_string(opset);
  const fs::path script = fs::path(UNITY_SOURCE_DIR) / "tests" / "python" / "export_norms.py";
  const std::string command = "/usr/bin/python3 '" + script.string() + "' '" + e.dir.string() +
                              "' --opset " + std::to_string(opset) + " --only " + model +
                              " 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) {
    e.skip = "cannot run " + command;
    return e;
  }
  std::string out;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe)) out += buffer;
  const int status = ::pclose(pipe);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    e.skip = "the exporter cannot run: " + command;
    return e;
  }
  EXPECT_EQ(status, 0) << command;
  std::istringstream lines(out);
  std::string name;
  std::int64_t count = 0;
  while (lines >> name >> count) e.torch_parameters[name] = count;
  return e;
}

std::vector<const Node*> of_type(const Graph& g, OpType type) {
  std::vector<const Node*> out;
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == type) out.push_back(&n);
  return out;
}

void expect_plans(const Graph& g, const std::string& label) {
  const MachineSpec summit = load_machine("summit", {1, 0});
  for (const std::string mode : {"joint", "data-parallel"}) {
    OptimizeOptions options;
    options.mode = mode;
    options.budget = 8;
    const Plan plan = optimize_plan(g, summit, options);
    EXPECT_EQ(plan.summary.devices, 6) << label << " " << mode;
    EXPECT_TRUE(std::isfinite(plan.summary.iteration_time_ms) && plan.summary.iteration_time_ms > 0)
        << label << " " << mode;
  }
}

class OnnxNormImport : public ::testing::TestWithParam<int> {
 protected:
  void TearDown() override {
    if (!exported_.dir.empty()) {
      std::error_code ignored;
      fs::remove_all(exported_.dir.parent_path(), ignored);
    }
  }
  // The model exported and imported; nothing when the export must skip (the test then returns).
  std::optional<Graph> load(const std::string& name) {
    exported_ = export_norms(GetParam(), name);
    if (!exported_.skip.empty()) {
      std::cout << "skipping: " << exported_.skip << "\n";
      return std::nullopt;
    }
    Graph g = import_onnx(exported_.dir / (name + ".onnx"), {.batch_size = kSummitBatch});
    EXPECT_EQ(g.parameter_count(), exported_.torch_parameters.at(name)) << name;
    return g;
  }
  Exported exported_;
};

TEST_P(OnnxNormImport, GroupNormIsALayerNormOverEachGroupWithThePerChannelAffine) {
  const auto loaded = load("groupnorm_cnn");
  if (!loaded) GTEST_SKIP() << exported_.skip;
  const Graph& g = *loaded;
  // Each GroupNorm: [n, 16, 16, 16] seen as [n, groups, 16 * 256 / groups], normalised over the
  // last dim; InstanceNormalization's constant ones and zeros are no parameters and leave no Mul
  // or Add; the affine weight and bias of [16, 1, 1] are the one Mul and Add per GroupNorm.
  const auto norms = of_type(g, OpType::LayerNorm);
  ASSERT_EQ(norms.size(), 2u);
  std::vector<std::int64_t> groups;
  for (const Node* n : norms) {
    EXPECT_EQ(n->op.attrs.get_int("normalized_dims", 1), 1) << n->op.name;
    EXPECT_EQ(n->op.attrs.get_int("rms", 0), 0) << n->op.name;
    EXPECT_EQ(n->inputs.size(), 1u) << n->op.name;
    const auto sizes = n->outputs.at(0).sizes();
    ASSERT_EQ(sizes.size(), 3u);
    EXPECT_EQ(sizes[1] * sizes[2], 16 * 16 * 16);
    groups.push_back(sizes[1]);
  }
  std::sort(groups.begin(), groups.end());
  EXPECT_EQ(groups, (std::vector<std::int64_t>{4, 8}));
  EXPECT_EQ(g.count(OpType::Mul), 2);
  EXPECT_EQ(g.count(OpType::Add), 2);
  expect_plans(g, "groupnorm_cnn");
}

TEST_P(OnnxNormImport, InstanceNormKeepsItsTrainedScaleAndBias) {
  const auto loaded = load("instancenorm_cnn");
  if (!loaded) GTEST_SKIP() << exported_.skip;
  const Graph& g = *loaded;
  const auto norms = of_type(g, OpType::LayerNorm);
  ASSERT_EQ(norms.size(), 1u);
  EXPECT_EQ(norms[0]->op.attrs.get_int("normalized_dims", 1), 2);  // H and W of [n, C, H, W]
  // The affine parameters start as ones and zeros too, but they are trained: Weights of [16, 1, 1].
  EXPECT_EQ(g.count(OpType::Mul), 1);
  EXPECT_EQ(g.count(OpType::Add), 1);
  expect_plans(g, "instancenorm_cnn");
}

TEST_P(OnnxNormImport, LlamaRmsNormBecomesOneRmsNorm) {
  const auto loaded = load("rmsnorm_mlp");
  if (!loaded) GTEST_SKIP() << exported_.skip;
  const Graph& g = *loaded;
  const auto norms = of_type(g, OpType::LayerNorm);
  ASSERT_EQ(norms.size(), 2u);
  for (const Node* n : norms) {
    EXPECT_EQ(n->op.attrs.get_int("rms", 0), 1) << n->op.name;
    EXPECT_NEAR(n->op.attrs.get_double("epsilon", 0), 1e-6, 1e-9) << n->op.name;
    EXPECT_EQ(n->inputs.size(), 2u) << n->op.name;  // x and gamma
  }
  // Nothing of the decomposed form is left.
  EXPECT_EQ(g.count(OpType::Pow), 0);
  EXPECT_EQ(g.count(OpType::Sqrt), 0);
  EXPECT_EQ(g.count(OpType::ReduceMean), 0);
  expect_plans(g, "rmsnorm_mlp");
}

TEST_P(OnnxNormImport, RmsNormWithoutAScaleStaysInPieces) {
  // Our RMSNorm always has a gamma: x / sqrt(mean(x^2) + eps) alone imports as its operators.
  const auto loaded = load("rmsnorm_div");
  if (!loaded) GTEST_SKIP() << exported_.skip;
  const Graph& g = *loaded;
  EXPECT_EQ(g.count(OpType::LayerNorm), 0);
  EXPECT_EQ(g.count(OpType::Pow), 2);
  EXPECT_EQ(g.count(OpType::Sqrt), 2);
  EXPECT_EQ(g.count(OpType::Div), 2);
  expect_plans(g, "rmsnorm_div");
}

std::string opset_name(const ::testing::TestParamInfo<int>& p) {
  return "opset" + std::to_string(p.param);
}

INSTANTIATE_TEST_SUITE_P(Opsets, OnnxNormImport, ::testing::Values(13, 17, 18), opset_name);

}  // namespace
}  // namespace unity
