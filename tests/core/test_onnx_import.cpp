// ONNX import: small committed models (tests/data/onnx, written by make_small_models.py) cover the
// operator mapping, constant folding, BatchNorm folding and the LayerNorm/GELU patterns; real
// PyTorch exports (ResNeXt-50, a TransformerEncoder) are made at test time when /usr/bin/python3
// has torch and torchvision, and skipped otherwise.
#include <gtest/gtest.h>

#include <unistd.h>
#include "onnx_test_files.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <system_error>

#include "unity/core/errors.h"
#include "unity/core/onnx/onnx_import.h"
#include "unity/core/onnx/onnx_operator_scope.h"
#include "unity/core/zoo/model_zoo.h"

namespace unity {
namespace {

namespace fs = std::filesystem;
using onnx_test::data;
using onnx_test::remove_scratch;

fs::path import_scratch_dir() { return onnx_test::scratch_dir("unity_onnx_test_"); }

const Node* find_node(const Graph& g, const std::string& name) {
  for (const auto& [id, node] : g.nodes()) {
    if (node.op.name == name) return &node;
  }
  return nullptr;
}

std::int64_t count_pool(const Graph& g, const std::string& kind) {
  std::int64_t n = 0;
  for (const auto& [id, node] : g.nodes()) {
    if (node.op.type == OpType::Pool2D && node.op.attrs.get_string("pool") == kind) ++n;
  }
  return n;
}

// The message of the InputError that `f` throws ("" when it throws none).
template <typename F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(OnnxImport, MlpGemmBecomesLinearWithTransposedWeight) {
  const Graph g = import_onnx(data("mlp.onnx"));
  EXPECT_EQ(g.name, "mlp");
  EXPECT_EQ(g.batch_size, 4);
  EXPECT_EQ(g.count(OpType::Input), 1);
  EXPECT_EQ(g.count(OpType::Linear), 2);
  EXPECT_EQ(g.count(OpType::Relu), 1);
  EXPECT_EQ(g.count(OpType::Weight), 4);
  // torch stores nn.Linear(8, 16).weight as [16, 8] (Gemm transB=1); our Linear wants [in, out].
  const Node* w = find_node(g, "0.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->outputs.at(0).sizes(), (std::vector<std::int64_t>{8, 16}));
  EXPECT_EQ(g.parameter_count(), 8 * 16 + 16 + 16 * 4 + 4);
  ASSERT_EQ(g.sinks().size(), 1u);
  EXPECT_EQ(g.shape(g.sinks().front()).sizes(), (std::vector<std::int64_t>{4, 4}));
}

TEST(OnnxImport, CnnFoldsBatchNormIntoConvBias) {
  const Graph g = import_onnx(data("cnn.onnx"));
  EXPECT_EQ(g.count(OpType::Conv2D), 2);
  EXPECT_EQ(g.count(OpType::BatchNorm), 0);
  EXPECT_EQ(g.count(OpType::Relu), 2);
  EXPECT_EQ(count_pool(g, "max"), 1);
  EXPECT_EQ(count_pool(g, "avg"), 1);
  EXPECT_EQ(g.count(OpType::Flatten), 1);
  EXPECT_EQ(g.count(OpType::Linear), 1);
  for (const auto& [id, node] : g.nodes()) {
    if (node.op.type == OpType::Conv2D) {
      EXPECT_EQ(node.inputs.size(), 3u) << g.describe(id) << " should carry the folded bias";
    }
  }
  // Conv weights, one [out] bias per conv (BatchNorm's shift), and the classifier.
  EXPECT_EQ(g.parameter_count(), (8 * 3 * 9 + 8) + (16 * 8 * 9 + 16) + (16 * 10 + 10));
  ASSERT_EQ(g.sinks().size(), 1u);
  EXPECT_EQ(g.shape(g.sinks().front()).sizes(), (std::vector<std::int64_t>{2, 10}));
}

void expect_encoder_layer(const Graph& g) {
  EXPECT_EQ(g.count(OpType::LayerNorm), 2);
  EXPECT_EQ(g.count(OpType::Gelu), 1);
  // Nothing of the decomposed forms is left over.
  EXPECT_EQ(g.count(OpType::Erf), 0);
  EXPECT_EQ(g.count(OpType::Pow), 0);
  EXPECT_EQ(g.count(OpType::Sqrt), 0);
  EXPECT_EQ(g.count(OpType::ReduceMean), 0);
  // q/k/v packed projection, output projection, and the two feed-forward layers, all with bias.
  EXPECT_EQ(g.count(OpType::Linear), 4);
  for (const auto& [id, node] : g.nodes()) {
    if (node.op.type == OpType::Linear) {
      EXPECT_EQ(node.inputs.size(), 3u) << g.describe(id);
    }
  }
  EXPECT_EQ(g.count(OpType::BatchMatMul), 2);
  EXPECT_EQ(g.count(OpType::Softmax), 1);
  // The three slices of the packed projection are one Split with every piece used.
  EXPECT_EQ(g.count(OpType::Split), 1);
  ASSERT_EQ(g.sinks().size(), 1u);
  EXPECT_EQ(g.shape(g.sinks().front()).sizes(), (std::vector<std::int64_t>{3, 5, 16}));
  // Same parameters as torch's layer: 4 Linear (with bias) and 2 LayerNorm (gamma, beta).
  EXPECT_EQ(g.parameter_count(),
            (16 * 48 + 48) + (16 * 16 + 16) + (16 * 32 + 32) + (32 * 16 + 16) + 4 * 16);
}

TEST(OnnxImport, TransformerOpset13RecognisesDecomposedLayerNormAndGelu) {
  // The batch is dynamic: the attention reshapes are Shape/Gather/Concat arithmetic, folded with
  // the batch size given here.
  const Graph g = import_onnx(data("transformer_opset13.onnx"), {.batch_size = 3});
  EXPECT_EQ(g.batch_size, 3);
  expect_encoder_layer(g);
}

TEST(OnnxImport, TransformerOpset17MapsLayerNormalization) {
  const Graph g = import_onnx(data("transformer_opset17.onnx"), {.batch_size = 3});
  expect_encoder_layer(g);
}

TEST(OnnxImport, SymbolicBatchNeedsBatchSize) {
  const std::string message = input_error([] { import_onnx(data("transformer_opset13.onnx")); });
  EXPECT_NE(message.find("symbolic batch"), std::string::npos) << message;
  EXPECT_NE(message.find("--batch"), std::string::npos) << message;
}

TEST(OnnxImport, TokenIdsBecomeInt64InputAndGatherBecomesEmbedding) {
  const Graph g = import_onnx(data("embedding.onnx"));
  EXPECT_EQ(g.count(OpType::Embedding), 1);
  EXPECT_EQ(g.count(OpType::ReduceMean), 1);
  EXPECT_EQ(g.count(OpType::Linear), 1);
  const Node* ids = find_node(g, "ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(ids->op.type, OpType::Input);
  EXPECT_EQ(ids->outputs.at(0).dtype, DataType::Int64);
  EXPECT_EQ(g.parameter_count(), 50 * 8 + 8 * 4 + 4);
}

TEST(OnnxImport, PadFoldsIntoPoolingAndCeilModeBecomesPadding) {
  const Graph g = import_onnx(data("pooling_variants.onnx"));
  const Node* avg = find_node(g, "avg_pool");
  ASSERT_NE(avg, nullptr);
  // The Pad before the 3x3 average pool is the pool's own padding: the size is kept.
  EXPECT_EQ(avg->op.attrs.get_ints("padding"), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(avg->outputs.at(0).sizes(), (std::vector<std::int64_t>{1, 4, 9, 9}));
  // A zero Pad counts in the average, as the pool's own padding would not (count_include_pad 0).
  EXPECT_EQ(avg->op.attrs.get_int("count_include_pad", 0), 1);
  // ceil_mode=1: 9 -> 5 (not 4), the last, partial window reaching into one pixel of end padding.
  const Node* max = find_node(g, "max_pool");
  ASSERT_NE(max, nullptr);
  EXPECT_EQ(max->outputs.at(0).sizes(), (std::vector<std::int64_t>{1, 4, 5, 5}));
  EXPECT_EQ(max->op.attrs.get_ints("padding"), (std::vector<std::int64_t>{0, 0}));
  EXPECT_EQ(max->op.attrs.get_ints("padding_end"), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(g.count(OpType::Relu), 1);  // Clip(min=0)
  EXPECT_EQ(g.count(OpType::Softmax), 1);
  ASSERT_EQ(g.sinks().size(), 1u);
  EXPECT_EQ(g.shape(g.sinks().front()).sizes(), (std::vector<std::int64_t>{1, 100}));
}

TEST(OnnxImport, LayoutOpsAndShapeArithmeticFold) {
  const Graph g = import_onnx(data("layout_ops.onnx"));
  // Shape -> Gather -> Unsqueeze -> Concat folds into the Reshape target, which is a no-op here.
  EXPECT_EQ(g.count(OpType::Reshape), 4);  // Unsqueeze, Squeeze, Gather's dropped axis, [0, 2, -1]
  EXPECT_EQ(g.count(OpType::Transpose), 1);
  EXPECT_EQ(g.count(OpType::Concat), 1);
  // Split, Slice and the Gather of one index are Splits.
  EXPECT_EQ(g.count(OpType::Split), 3);
  // 1 - x, 2 / x, x ^ 2 and -x with scalar constants.
  EXPECT_EQ(g.count(OpType::ScalarAdd), 1);
  EXPECT_EQ(g.count(OpType::ScalarMul), 3);
  EXPECT_EQ(g.count(OpType::Pow), 2);
  EXPECT_EQ(g.count(OpType::Weight), 0);
  const Node* out = find_node(g, "transpose");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->outputs.at(0).sizes(), (std::vector<std::int64_t>{2, 2, 2}));
}

TEST(OnnxImport, ResizeKeepsResolvedSizesAndComputedSizesFold) {
  using Ints = std::vector<std::int64_t>;
  const Graph g = import_onnx(data("resize_variants.onnx"));
  // Three Resize nodes: the last keeps every size and is nothing.
  EXPECT_EQ(g.count(OpType::Resize), 2);
  EXPECT_EQ(g.count(OpType::Weight), 0);  // the sizes and scales are attributes, not inputs
  const Node* bilinear = find_node(g, "bilinear");
  ASSERT_NE(bilinear, nullptr);
  // Sizes computed from Shape (Gather, Cast, Mul, Concat) fold; only H and W are listed.
  EXPECT_EQ(bilinear->op.attrs.get_ints("axes"), (Ints{2, 3}));
  EXPECT_EQ(bilinear->op.attrs.get_ints("sizes"), (Ints{8, 10}));
  EXPECT_EQ(bilinear->op.attrs.get_string("mode"), "linear");
  EXPECT_EQ(bilinear->op.attrs.get_string("coordinate_transformation_mode"), "pytorch_half_pixel");
  const Node* nearest = find_node(g, "nearest");
  ASSERT_NE(nearest, nullptr);
  EXPECT_EQ(nearest->op.attrs.get_ints("sizes"), (Ints{16, 30}));
  EXPECT_EQ(nearest->op.attrs.get_string("nearest_mode"), "floor");
  ASSERT_EQ(g.sinks().size(), 1u);
  EXPECT_EQ(g.shape(g.sinks().front()).sizes(), (Ints{2, 3, 16, 30}));
  // tf_crop_and_resize: a product with a Constant matrix of taps per resampled axis (H and W).
  const Graph crop = import_onnx(data("resize_crop.onnx"));
  EXPECT_EQ(crop.count(OpType::Resize), 0);
  EXPECT_EQ(crop.count(OpType::MatMul), 2);
  EXPECT_EQ(crop.count(OpType::Constant), 2);
  EXPECT_EQ(crop.parameter_count(), 0);
}

// Pads that no Conv or pooling takes are Pad operators: reflect, a constant that crops (negative
// pads), edge. Cropping in edge mode is refused, naming the node.
TEST(OnnxImport, PadVariantsAreOperatorsAndEdgeCroppingIsRefused) {
  using Ints = std::vector<std::int64_t>;
  const Graph g = import_onnx(data("pad_variants.onnx"));
  std::vector<const Node*> pads;
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == OpType::Pad) pads.push_back(&n);
  ASSERT_EQ(pads.size(), 3u);
  EXPECT_EQ(pads[0]->op.attrs.get_string("mode"), "reflect");
  EXPECT_EQ(pads[1]->op.attrs.get_ints("pads"), (Ints{0, 0, 1, 0, 0, 0, 0, -1}));
  EXPECT_EQ(pads[1]->op.attrs.get_double("value"), 0.5);
  EXPECT_FALSE(pads[1]->op.attrs.has("mode"));
  EXPECT_EQ(pads[2]->op.attrs.get_string("mode"), "edge");
  ASSERT_EQ(g.sinks().size(), 1u);
  EXPECT_EQ(g.shape(g.sinks().front()).sizes(), (Ints{2, 3, 9, 9}));
  const std::string message = input_error([] { import_onnx(data("pad_edge_crop.onnx")); });
  EXPECT_NE(message.find("Pad (node 'edge_crop')"), std::string::npos) << message;
  EXPECT_NE(message.find("constant mode only"), std::string::npos) << message;
}

TEST(OnnxImport, UnsupportedOperatorsAreAllListedWithANodeName) {
  const std::string message = input_error([] { import_onnx(data("unsupported_ops.onnx")); });
  EXPECT_NE(message.find("unsupported ONNX operators"), std::string::npos) << message;
  EXPECT_NE(message.find("NonMaxSuppression (node 'nms_1')"), std::string::npos) << message;
  // TopK, which the model also holds, is imported since the index operators came.
  EXPECT_EQ(message.find("TopK"), std::string::npos) << message;
  EXPECT_EQ(message.find("Relu"), std::string::npos) << message;
}

// NonZero is out of Unity's scope, not merely missing: the refusal names the node, the operator and
// the reason (core/src/onnx/onnx_operator_scope.cpp); the CLI prints it and exits with 1.
TEST(OnnxImport, OutOfScopeOperatorsAreRefusedWithTheReason) {
  const std::string message = input_error([] { import_onnx(data("data_dependent_op.onnx")); });
  EXPECT_NE(message.find("NonZero (node 'nonzero_1')"), std::string::npos) << message;
  EXPECT_NE(message.find("data-dependent"), std::string::npos) << message;
  EXPECT_NE(message.find("static plan"), std::string::npos) << message;
  // An imported operator (TopK) gets no such reason.
  const std::string both = input_error([] { import_onnx(data("unsupported_ops.onnx")); });
  const auto reasons = both.find("Out of Unity's scope: ");
  ASSERT_NE(reasons, std::string::npos) << both;
  EXPECT_EQ(both.find("TopK", reasons), std::string::npos) << both;
  EXPECT_NE(both.find("NonMaxSuppression (inference-only): ", reasons), std::string::npos) << both;
  EXPECT_EQ(onnx_operator_status("", "MaxUnpool"), OnnxOperatorStatus::Missing);
  EXPECT_EQ(onnx_operator_status("", "GatherND"), OnnxOperatorStatus::Imported);
  EXPECT_EQ(onnx_operator_status("", "GridSample"), OnnxOperatorStatus::Imported);
  EXPECT_EQ(onnx_operator_status("", "TopK"), OnnxOperatorStatus::Imported);
  EXPECT_EQ(onnx_operator_status("", "Relu"), OnnxOperatorStatus::Imported);
  EXPECT_EQ(onnx_operator_status("ai.onnx", "Scan"), OnnxOperatorStatus::OutOfScope);
  EXPECT_EQ(onnx_operator_status("ai.onnx", "Loop"), OnnxOperatorStatus::Imported);
  EXPECT_EQ(onnx_operator_status("ai.onnx.ml", "TreeEnsembleClassifier"),
            OnnxOperatorStatus::OutOfScope);
  EXPECT_EQ(onnx_operator_status("com.example", "Relu"), OnnxOperatorStatus::Missing);
}

TEST(OnnxImport, AsymmetricPaddingIsRejectedClearly) {
  const std::string message = input_error([] { import_onnx(data("asymmetric_padding.onnx")); });
  EXPECT_NE(message.find("conv_same"), std::string::npos) << message;
  EXPECT_NE(message.find("asymmetric padding"), std::string::npos) << message;
}

TEST(OnnxImport, FilesThatAreNotOnnxNameTheFile) {
  const fs::path text = import_scratch_dir() / "notes.onnx";
  {
    std::ofstream out(text);
    out << "this is not a protobuf\n";
  }
  std::string message = input_error([&] { import_onnx(text); });
  EXPECT_NE(message.find("notes.onnx"), std::string::npos) << message;
  message = input_error([] { import_onnx("/nonexistent/model.onnx"); });
  EXPECT_NE(message.find("/nonexistent/model.onnx"), std::string::npos) << message;
  remove_scratch(text);
}

// The malformed models the fuzzer found (tests/fuzz/corpus/fuzz_onnx_import/regression-*: a Gemm
// whose B is not a matrix, a pooling stride of one number, ...) each end in an InputError that
// names a node or the file, never in another exception (the CLI's "internal error").
TEST(OnnxImport, FuzzRegressionsAreRefusedAsUserErrors) {
  const fs::path corpus =
      fs::path(UNITY_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "fuzz_onnx_import";
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    if (entry.path().filename().string().rfind("regression-", 0) != 0) continue;
    ++seen;
    SCOPED_TRACE(entry.path().filename().string());
    try {
      import_onnx(entry.path());
      ADD_FAILURE() << "imported";
    } catch (const InputError& e) {
      EXPECT_FALSE(std::string(e.what()).empty());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an InputError: " << e.what();
    }
  }
  EXPECT_GE(seen, 5);
}

TEST(OnnxImport, GemmWhoseBIsNotAMatrixNamesTheNode) {
  const fs::path file = fs::path(UNITY_SOURCE_DIR) / "tests" / "fuzz" / "corpus" /
                        "fuzz_onnx_import" / "regression-gemm-b-not-2d.onnx";
  const std::string message = input_error([&] { import_onnx(file); });
  EXPECT_NE(message.find("Gemm's B is 2-D"), std::string::npos) << message;
}

// Runs tests/python/export_torchvision.py; returns "" on success, else why the test must skip.
std::string export_with_torch(const std::string& model, const fs::path& output) {
  if (std::system("/usr/bin/python3 -c 'import torch, torchvision' >/dev/null 2>&1") != 0) {
    return "/usr/bin/python3 cannot import torch and torchvision";
  }
  const fs::path script = fs::path(UNITY_SOURCE_DIR) / "tests" / "python" / "export_torchvision.py";
  const std::string command = "/usr/bin/python3 '" + script.string() + "' " + model + " '" +
                              output.string() + "' --batch 2 >/dev/null";
  if (std::system(command.c_str()) != 0) return "export failed: " + command;
  return "";
}

TEST(OnnxImport, TorchvisionResNeXt50MatchesTheZoo) {
  const fs::path file = import_scratch_dir() / "resnext50_32x4d.onnx";
  if (const std::string why = export_with_torch("resnext50_32x4d", file); !why.empty()) {
    remove_scratch(file);
    std::cout << "skipping: " << why << "\n";
    GTEST_SKIP() << why;
  }
  const Graph imported = import_onnx(file, {.batch_size = 2});
  remove_scratch(file);
  const Graph zoo = zoo::build("resnext50", 2);
  EXPECT_EQ(imported.batch_size, 2);
  for (OpType type : {OpType::Conv2D, OpType::Relu, OpType::Add, OpType::Pool2D, OpType::Linear}) {
    EXPECT_EQ(imported.count(type), zoo.count(type)) << to_string(type);
  }
  EXPECT_EQ(imported.count(OpType::Conv2D), 53);
  EXPECT_EQ(imported.count(OpType::Relu), 49);
  EXPECT_EQ(imported.count(OpType::Add), 16);
  EXPECT_EQ(count_pool(imported, "max"), 1);
  EXPECT_EQ(count_pool(imported, "avg"), 1);
  EXPECT_EQ(imported.count(OpType::Linear), 1);
  // The export keeps its 53 BatchNormalization nodes; each folds into the conv before it.
  EXPECT_EQ(imported.count(OpType::BatchNorm), 0);
  EXPECT_EQ(zoo.count(OpType::BatchNorm), 53);
  // Folding turns BatchNorm's scale and shift (2 per channel) into one conv bias per channel, so
  // the parameter counts differ by one value per BatchNorm channel, no more.
  const std::int64_t difference = zoo.parameter_count() - imported.parameter_count();
  EXPECT_GT(difference, 0);
  EXPECT_LT(difference, zoo.parameter_count() / 100);
  ASSERT_EQ(imported.sinks().size(), 1u);
  EXPECT_EQ(imported.shape(imported.sinks().front()).sizes(), (std::vector<std::int64_t>{2, 1000}));
}

TEST(OnnxImport, TorchTransformerEncoderImports) {
  const fs::path file = import_scratch_dir() / "transformer_encoder.onnx";
  if (const std::string why = export_with_torch("transformer_encoder", file); !why.empty()) {
    remove_scratch(file);
    std::cout << "skipping: " << why << "\n";
    GTEST_SKIP() << why;
  }
  const Graph g = import_onnx(file, {.batch_size = 2});
  remove_scratch(file);
  // 2 layers of: LayerNorm x2, Linear x4 (packed qkv, out, ff1, ff2), BatchMatMul x2, Softmax,
  // Relu.
  EXPECT_EQ(g.count(OpType::LayerNorm), 4);
  EXPECT_EQ(g.count(OpType::Linear), 8);
  EXPECT_EQ(g.count(OpType::BatchMatMul), 4);
  EXPECT_EQ(g.count(OpType::Softmax), 2);
  EXPECT_EQ(g.count(OpType::Relu), 2);
  EXPECT_EQ(g.count(OpType::Split), 2);
  EXPECT_EQ(g.count(OpType::ReduceMean), 0);
  // torch's parameter count for this model (each layer: 49,984).
  EXPECT_EQ(g.parameter_count(), 2 * 49984);
  ASSERT_EQ(g.sinks().size(), 1u);
  EXPECT_EQ(g.shape(g.sinks().front()).sizes(), (std::vector<std::int64_t>{2, 32, 64}));
}


// What a model computes in forward from nothing it trains is folded at import into Constants that
// hold its values: the sinusoidal table's Sin and Cos (folded by their point-wise definitions),
// the causal mask, the picked rows and the sampling grid. No parameter, no Sin or Cos operator.
TEST(OnnxImport, ConstantsComputedInForwardFoldIntoConstants) {
  const Graph g = import_onnx(data("node/test_unity_constants_in_forward/model.onnx"));
  EXPECT_EQ(g.count(OpType::Sin), 0);
  EXPECT_EQ(g.count(OpType::Cos), 0);
  EXPECT_EQ(g.count(OpType::Weight), 0);
  EXPECT_EQ(g.count(OpType::Constant), 4);
  EXPECT_EQ(g.parameter_count(), 0);
  std::int64_t values = 0;
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == OpType::Constant) values += n.op.values->size();
  EXPECT_EQ(values, 178);
}

}  // namespace
}  // namespace unity
