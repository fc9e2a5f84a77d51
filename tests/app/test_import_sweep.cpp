// The import sweep (issue 20): models exported from PyTorch as a user would export them
// (tests/python/export_sweep.py: every torchvision classification family, nn.Transformer,
// nn.TransformerEncoder, LSTM, GRU and bidirectional ReLU RNN language models, a GPT-style causal
// decoder), each imported and planned in every mode on summit 1, 2 and 4 nodes and on cpu-local 2
// and 4 ranks. Every command must exit 0 and write a plan whose PCG validates and whose every
// operator has a machine view. A few train on 2 CPU ranks with --check, equal to one rank.
//
// The exports are the families' own classes at a small size (export_sweep.py --small), so the whole
// sweep runs in minutes with small search budgets; the published sizes are planned by the
// benchmark (unity_bench_import_sweep), which prints their search time and memory.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "training_check.h"
#include "unity/core/plan/plan.h"

namespace fs = std::filesystem;

namespace {

// Every model of the sweep; export_sweep.py --list prints the same names.
const std::vector<std::string> kModels = {"alexnet",
                                          "vgg11",
                                          "resnet18",
                                          "resnext50_32x4d",
                                          "wide_resnet50_2",
                                          "densenet121",
                                          "inception_v3",
                                          "googlenet",
                                          "squeezenet1_1",
                                          "shufflenet_v2_x1_0",
                                          "mnasnet0_5",
                                          "mobilenet_v2",
                                          "mobilenet_v3_small",
                                          "efficientnet_b0",
                                          "regnet_y_400mf",
                                          "convnext_tiny",
                                          "vit_b_16",
                                          "swin_t",
                                          "maxvit_t",
                                          "transformer",
                                          "transformer_encoder",
                                          "lstm_lm",
                                          "gru_lm",
                                          "rnn_relu_lm",
                                          "gpt_decoder",
                                          "llama_decoder",
                                          "fcn_resnet50",
                                          "deeplabv3_resnet50",
                                          "lraspp_mobilenet_v3_large",
                                          "vae_decoder",
                                          "moe_topk",
                                          "moe_shared_expert",
                                          "unet",
                                          "r3d_18",
                                          "mc3_18",
                                          "audio_encoder"};

// Divisible by every device count of the sweep (6, 12, 24, 2, 4).
constexpr int kBatch = 24;

const fs::path& export_dir() {
  static const fs::path dir =
      fs::temp_directory_path() / ("unity-sweep-" + std::to_string(getpid()));
  return dir;
}

// Exports one model of the sweep (each test is a process of its own under CTest); "" on success,
// else why the test must skip. Under CTest the fixture ImportSweep.ExportEveryModel has exported
// every model in one Python process (tests/app/CMakeLists.txt: importing torch alone takes 2 s),
// into UNITY_SWEEP_EXPORTS; a test run by itself exports its own.
std::string export_model(const std::string& model) {
  fs::create_directories(export_dir());
  if (const char* shared = std::getenv("UNITY_SWEEP_EXPORTS")) {
    const fs::path exported = fs::path(shared) / (model + ".onnx");
    std::error_code copy_failed;
    fs::copy_file(exported, export_dir() / (model + ".onnx"), fs::copy_options::overwrite_existing,
                  copy_failed);
    if (!copy_failed) return "";
  }
  if (std::system("/usr/bin/python3 -c 'import torch, torchvision' >/dev/null 2>&1") != 0)
    return "/usr/bin/python3 cannot import torch and torchvision";
  const fs::path script = fs::path(UNITY_SOURCE_DIR) / "tests" / "python" / "export_sweep.py";
  const std::string command = "/usr/bin/python3 '" + script.string() + "' '" +
                              export_dir().string() + "' --small --only " + model +
                              " >/dev/null 2>&1";
  if (std::system(command.c_str()) != 0) return "export_sweep.py failed: " + command;
  return "";
}

class ImportSweep : public ::testing::TestWithParam<std::string> {
 protected:
  static void TearDownTestSuite() { fs::remove_all(export_dir()); }

  // The export imported for `batch` samples into "<model><tag>.json".
  fs::path imported(const std::string& model, int batch = kBatch, const std::string& tag = "") {
    const fs::path json = export_dir() / (model + tag + ".json");
    const auto r = run_cli("import " + (export_dir() / (model + ".onnx")).string() + " --batch " +
                           std::to_string(batch) + " -o " + json.string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json;
  }
};

TEST_P(ImportSweep, PlansInEveryModeOnEveryMachine) {
  const std::string model = GetParam();
  if (const std::string why = export_model(model); !why.empty()) GTEST_SKIP() << why;
  const fs::path json = imported(model);
  ASSERT_TRUE(fs::exists(json));
  const std::vector<std::string> machines = {"summit --nodes 1", "summit --nodes 2",
                                             "summit --nodes 4", "cpu-local --gpus 2",
                                             "cpu-local --gpus 4"};
  const fs::path plan_file = export_dir() / (model + ".plan.json");
  for (const auto& machine : machines) {
    for (const std::string mode : {"joint", "sequential", "data-parallel", "expert"}) {
      SCOPED_TRACE(model + " on " + machine + ", " + mode);
      const auto r = run_cli("optimize " + json.string() + " --machine " + machine + " --mode " +
                             mode + " --budget 4 --out " + plan_file.string());
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const unity::Plan plan = unity::plan_from_json(nlohmann::json::parse(slurp(plan_file)));
      EXPECT_NO_THROW(plan.pcg.validate());
      EXPECT_TRUE(std::isfinite(plan.summary.iteration_time_ms));
      EXPECT_GT(plan.summary.iteration_time_ms, 0);
      if (!plan.pipeline) {
        for (const auto& [id, node] : plan.pcg.nodes()) {
          if (unity::is_compute_op(node.op.type)) {
            EXPECT_TRUE(plan.mapping.views.count(id)) << "no view for " << node.op.name;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TorchExports, ImportSweep, ::testing::ValuesIn(kModels), model_name);

// Scaled versions of eleven of them train on 2 CPU ranks with the data-parallel plan, and the run
// equals one rank (--check): the importer's decompositions (HardSwish, strided Slice, unrolled
// LSTM and bidirectional ReLU RNN, the transformer's attention reshapes, grouped-query rotary
// attention, bilinear and nearest Resize, GroupNorm as InstanceNormalization between Reshapes, the
// top-k MoE's routing, ConvTranspose, 1-D convolution) are trained, not only planned.
class SweepTraining : public ImportSweep {};

TEST_P(SweepTraining, DataParallelOnTwoRanksEqualsOneRank) {
  const std::string model = GetParam();
  if (const std::string why = export_model(model); !why.empty()) GTEST_SKIP() << why;
  const fs::path json = imported(model, 4, ".train");
  ASSERT_FALSE(HasFailure());
  expect_trains_like_one_rank(json, export_dir() / (model + ".train.plan.json"));
}

INSTANTIATE_TEST_SUITE_P(TorchExports, SweepTraining,
                         ::testing::Values("mobilenet_v3_small", "swin_t", "lstm_lm", "rnn_relu_lm",
                                           "transformer", "llama_decoder",
                                           "lraspp_mobilenet_v3_large", "vae_decoder", "moe_topk",
                                           "unet", "audio_encoder"),
                         model_name);

// The joint plan too, where it splits a convolution's spatial dims inside a pipeline layout
// (mc3_18 on 2 CPU ranks: tp 2 with 4 micro-batches): a device reads its input in overlapping
// windows, which the stage hands it as one box (their bounding box) and the engine serves each
// window from. Before, `unity run` refused the plan ("read in two parts on one device").
class SweepJointTraining : public ImportSweep {};

TEST_P(SweepJointTraining, JointPlanOnTwoRanksEqualsOneRank) {
  const std::string model = GetParam();
  if (const std::string why = export_model(model); !why.empty()) GTEST_SKIP() << why;
  const fs::path json = imported(model, 4, ".joint");
  ASSERT_FALSE(HasFailure());
  expect_joint_plan_trains_like_one_rank(json, export_dir() / (model + ".joint.plan.json"));
}

// And where the joint plan of an export could not run before: a segment's tensor-parallel plan
// handing on an activation split over its devices (swin_t, transformer_encoder, the shared-expert
// MoE), an unrolled LSTM's unread gate taken for a second output (lstm_lm), a searched rewrite
// that summed a bias once per partial sum (mobilenet_v2), an attention holding its batch merged
// with its heads in [sequence, batch x heads, head_dim] that a data-parallel copy halves
// (moe_topk), a BatchNorm whose batch a pipeline layout split (densenet121).
INSTANTIATE_TEST_SUITE_P(TorchExports, SweepJointTraining,
                         ::testing::Values("mc3_18", "swin_t", "transformer_encoder", "lstm_lm",
                                           "mobilenet_v2", "moe_topk", "moe_shared_expert",
                                           "densenet121"),
                         model_name);

// Tensor-parallel stages on data-parallel copies (4 CPU ranks: tp 2 x dp 2), the layout where the
// attention's [sequence, batch x heads, head_dim] reshapes must follow each copy's share of the
// batch: before, the segment plans kept the whole batch's sizes and the run crashed.
class SweepTensorParallelCopies : public ImportSweep {};

TEST_P(SweepTensorParallelCopies, TwoCopiesOfTwoDevicesEqualOneRank) {
  const std::string model = GetParam();
  if (const std::string why = export_model(model); !why.empty()) GTEST_SKIP() << why;
  const fs::path json = imported(model, 4, ".tp");
  ASSERT_FALSE(HasFailure());
  const std::string planned = expect_plan_trains_like_one_rank(
      json, export_dir() / (model + ".tp.plan.json"), "--gpus 4 --mode expert --tp 2 --pp 1");
  EXPECT_NE(planned.find("tp 2 x pp 1 x dp 2"), std::string::npos) << planned;
}

INSTANTIATE_TEST_SUITE_P(TorchExports, SweepTensorParallelCopies,
                         ::testing::Values("transformer_encoder", "moe_topk"), model_name);

// Two pipeline stages in micro-batches of 2 (of 4 samples): each stage runs its segments for a
// micro-batch, the sizes its operators hold following the samples, which a sequence-first RNN
// holds as the inner factor of [sequence x batch, embed] and an attention as the outer one of
// [sequence, batch x heads, head_dim]. Before, the RNNs had no micro-batched layout.
class SweepMicroBatches : public ImportSweep {};

TEST_P(SweepMicroBatches, TwoStagesInMicroBatchesOfTwoEqualOneRank) {
  const std::string model = GetParam();
  if (const std::string why = export_model(model); !why.empty()) GTEST_SKIP() << why;
  const fs::path json = imported(model, 4, ".pp");
  ASSERT_FALSE(HasFailure());
  expect_plan_trains_like_one_rank(json, export_dir() / (model + ".pp.plan.json"),
                                   "--gpus 2 --mode expert --tp 1 --pp 2 --micro-batches 2");
}

INSTANTIATE_TEST_SUITE_P(TorchExports, SweepMicroBatches,
                         ::testing::Values("lstm_lm", "gru_lm", "transformer_encoder", "moe_topk"),
                         model_name);

}  // namespace
