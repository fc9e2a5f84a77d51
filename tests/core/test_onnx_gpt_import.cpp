// GPT-style causal decoders from ONNX: the causal mask folds (Trilu, Where, Equal, Slice of a
// buffer, Expand...), and each masked attention becomes one MultiHeadAttention with causal = 1.
// The torch exports (tests/python/export_gpt.py) are made at test time when /usr/bin/python3 has
// torch, and skipped otherwise; the scaled_dot_product_attention form of torch >= 2.0 is a
// committed hand-built model (tests/data/onnx/make_sdpa_attention.py). Imported models are
// planned on one Summit node (6 GPUs) in joint and data-parallel mode.
#include <gtest/gtest.h>

#include <unistd.h>
#include "onnx_test_files.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>

#include "unity/core/errors.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/onnx/onnx_import.h"
#include "unity/core/plan/plan_optimizer.h"

namespace unity {
namespace {

namespace fs = std::filesystem;
using onnx_test::data;
using onnx_test::remove_scratch;

fs::path scratch_dir() { return onnx_test::scratch_dir("unity_onnx_gpt_test_"); }

constexpr std::int64_t kBatch = 6;  // divisible by Summit's 6 GPUs per node
constexpr std::int64_t kVocab = 96, kSeq = 16, kEmbed = 32, kHeads = 4, kLayers = 2;

std::vector<const Node*> attentions(const Graph& g) {
  std::vector<const Node*> out;
  for (const auto& [id, node] : g.nodes())
    if (node.op.type == OpType::MultiHeadAttention) out.push_back(&node);
  return out;
}

void expect_causal_attention(const Graph& g, std::int64_t count) {
  const auto found = attentions(g);
  ASSERT_EQ(static_cast<std::int64_t>(found.size()), count);
  for (const Node* n : found) {
    EXPECT_EQ(n->op.attrs.get_int("causal", 0), 1) << n->op.name;
    EXPECT_EQ(n->op.attrs.get_int("num_heads"), kHeads) << n->op.name;
  }
  // Nothing of the attention is left in pieces, and the masks are gone with it.
  EXPECT_EQ(g.count(OpType::Softmax), 0);
  EXPECT_EQ(g.count(OpType::BatchMatMul), 0);
  EXPECT_EQ(g.count(OpType::ScalarMul), 0);
  EXPECT_EQ(g.count(OpType::Transpose), 0);
  EXPECT_EQ(g.count(OpType::Reshape), 0);
}

// Plans the model on one Summit node in both modes; each must succeed with a finite time.
void expect_plans(const Graph& g) {
  const MachineSpec summit = load_machine("summit", {1, 0});
  for (const std::string mode : {"joint", "data-parallel"}) {
    OptimizeOptions options;
    options.mode = mode;
    options.budget = 20;
    const Plan plan = optimize_plan(g, summit, options);
    EXPECT_EQ(plan.summary.devices, 6) << mode;
    EXPECT_GT(plan.summary.iteration_time_ms, 0) << mode;
    EXPECT_TRUE(std::isfinite(plan.summary.iteration_time_ms)) << mode;
    // The plan keeps the attention causal.
    std::int64_t causal = 0;
    for (const auto& [id, n] : plan.pcg.nodes()) {
      if (n.op.type == OpType::MultiHeadAttention) {
        EXPECT_EQ(n.op.attrs.get_int("causal", 0), 1) << mode << " " << n.op.name;
        ++causal;
      }
    }
    EXPECT_GT(causal, 0) << mode;
  }
}

TEST(OnnxGptImport, MaskConstantsFoldAndMaskedFillsImport) {
  // Range, Greater/LessOrEqual, Xor/And, Trilu with k, Tile and ScatterND fold into one [2, 4, 4]
  // causal mask; Where(mask, -inf, x) is the Add of an additive mask, Where(mask, 0.5, x) is
  // x * keep + 0.5 * mask. Without an attention around them the masks stay in the graph: as
  // Constants holding their values, not as trained Weights.
  const Graph g = import_onnx(data("causal_mask_folding.onnx"));
  EXPECT_EQ(g.count(OpType::Softmax), 1);
  EXPECT_EQ(g.count(OpType::Add), 2);
  EXPECT_EQ(g.count(OpType::Mul), 1);
  EXPECT_EQ(g.count(OpType::Weight), 0);
  EXPECT_EQ(g.count(OpType::Constant), 3);
  EXPECT_EQ(g.parameter_count(), 0);
  EXPECT_EQ(g.sinks().size(), 2u);
  // The additive mask: 0 where a position may be attended (on and below the diagonal), the fill
  // above it, for both [4, 4] blocks.
  int additive = 0;
  for (const auto& [id, n] : g.nodes()) {
    if (n.op.type != OpType::Constant || n.op.name.find(".mask") == std::string::npos) continue;
    if (g.uses(id).empty() || g.node(g.uses(id).front().node).op.type != OpType::Add) continue;
    ++additive;
    ASSERT_EQ(n.op.values->size(), 2 * 4 * 4);
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const float v = n.op.values->floats()[static_cast<std::size_t>(b * 16 + i * 4 + j)];
          if (j <= i)
            EXPECT_EQ(v, 0.0f) << b << " " << i << " " << j;
          else
            EXPECT_LT(v, -1e4f) << b << " " << i << " " << j;
        }
  }
  EXPECT_EQ(additive, 1);
}

TEST(OnnxGptImport, SdpaCausalExportBecomesOneCausalAttention) {
  // is_causal=True: the mask is Expand/Trilu/Equal/Where over Shape(q), Shape(k); the scale is
  // sqrt(1/sqrt(d)) on q and on k^T, computed from Shape(q).
  const Graph g = import_onnx(data("sdpa_causal_opset14.onnx"), {.batch_size = kBatch});
  expect_causal_attention(g, 1);
  EXPECT_EQ(g.count(OpType::Linear), 0);
  EXPECT_EQ(g.count(OpType::Add), 1);  // the residual
  EXPECT_EQ(g.parameter_count(), 4 * kEmbed * kEmbed);
  ASSERT_EQ(g.sinks().size(), 1u);
  EXPECT_EQ(g.shape(g.sinks().front()).sizes(), (std::vector<std::int64_t>{kBatch, kSeq, kEmbed}));
  expect_plans(g);
}

TEST(OnnxGptImport, SdpaBooleanMaskWithProjectionBiases) {
  // A boolean tril attn_mask becomes a float mask by Where(mask, 0, -inf). Of the four biases the
  // query's becomes a shift of the query input and the output's stays; the key's (softmax ignores
  // it) and the value's (absorbed by the output bias) are dropped.
  const Graph g = import_onnx(data("sdpa_bool_mask_opset17.onnx"), {.batch_size = kBatch});
  expect_causal_attention(g, 1);
  EXPECT_EQ(g.count(OpType::Add), 3);  // query shift, output bias, residual
  EXPECT_EQ(g.parameter_count(), 4 * kEmbed * kEmbed + 2 * kEmbed);
  const Node* attention = attentions(g).front();
  EXPECT_EQ(g.node(attention->inputs[0].node).op.type, OpType::Add);  // the shifted query
  EXPECT_EQ(attention->inputs[1], attention->inputs[2]);              // keys and values: x
}

// Runs tests/python/export_gpt.py; "" on success, else why the test must skip.
std::string export_gpt(const fs::path& output, const std::string& options) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
    return "/usr/bin/python3 cannot import torch";
  const fs::path script = fs::path(UNITY_SOURCE_DIR) / "tests" / "python" / "export_gpt.py";
  const std::string command = "/usr/bin/python3 '" + script.string() + "' '" + output.string() +
                              "' " + options + " >/dev/null 2>&1";
  const int status = std::system(command.c_str());
  if (status != 0 && WIFEXITED(status) && WEXITSTATUS(status) == 77)
    return "the exporter cannot export this: " + command;
  if (status != 0) return "FAIL export failed: " + command;
  return "";
}

struct GptExport {
  const char* label;
  const char* options;
  bool bias;
};

class OnnxGptTorchExport : public ::testing::TestWithParam<GptExport> {};

TEST_P(OnnxGptTorchExport, ImportsWithCausalAttentionAndPlans) {
  const GptExport& p = GetParam();
  const fs::path file = scratch_dir() / (std::string(p.label) + ".onnx");
  const std::string why = export_gpt(file, p.options);
  if (!why.empty()) {
    remove_scratch(file);
    ASSERT_NE(why.rfind("FAIL", 0), 0u) << why;
    std::cout << "skipping: " << why << "\n";
    GTEST_SKIP() << why;
  }
  const Graph g = import_onnx(file, {.batch_size = kBatch});
  remove_scratch(file);
  expect_causal_attention(g, kLayers);
  // 2 blocks of LayerNorm x2, MLP Linear x2, GELU; the final LayerNorm; the LM head.
  EXPECT_EQ(g.count(OpType::LayerNorm), 2 * kLayers + 1);
  EXPECT_EQ(g.count(OpType::Gelu), kLayers);
  EXPECT_EQ(g.count(OpType::Linear), 2 * kLayers + 1);
  EXPECT_EQ(g.count(OpType::Embedding), 1);
  // torch's parameter count (the position table's rows are read whole, as one constant), less the
  // key and value biases that the attention drops (see SdpaBooleanMaskWithProjectionBiases).
  const std::int64_t block = 4 * kEmbed + 4 * kEmbed * kEmbed + (kEmbed * 4 * kEmbed + 4 * kEmbed) +
                             (4 * kEmbed * kEmbed + kEmbed) + (p.bias ? 2 * kEmbed : 0);
  EXPECT_EQ(g.parameter_count(),
            kVocab * kEmbed + kSeq * kEmbed + kLayers * block + 2 * kEmbed + kEmbed * kVocab);
  ASSERT_EQ(g.sinks().size(), 1u);
  EXPECT_EQ(g.shape(g.sinks().front()).sizes(), (std::vector<std::int64_t>{kBatch, kSeq, kVocab}));
  expect_plans(g);
}

// torch 1.13 exports torch.triu/tril (Trilu) from opset 14 on; the registered-buffer mask of
// nanoGPT exports at 13 too. "packed" is nanoGPT's c_attn: one [e, 3e] projection split into q, k,
// v, which the attention cuts into three [e, e] weights.
INSTANTIATE_TEST_SUITE_P(
    Masks, OnnxGptTorchExport,
    ::testing::Values(GptExport{"buffer_opset13", "--opset 13 --mask buffer", false},
                      GptExport{"triu_opset14", "--opset 14 --mask triu", false},
                      GptExport{"tril_opset17", "--opset 17 --mask tril --tied", false},
                      GptExport{"triu_bias_opset17", "--opset 17 --mask triu --bias", true},
                      GptExport{"packed_bias_opset13", "--opset 13 --mask buffer --packed --bias",
                                true}),
    [](const auto& test) { return std::string(test.param.label); });

TEST(OnnxGptImport, AMaskComputedFromTheInputsIsACompareAndAWhere) {
  // A condition computed from the inputs is a Bool mask of a Compare, which Where selects by (the
  // masked fills of constant masks above still fold into additive masks).
  const fs::path file = scratch_dir() / "computed_where.onnx";
  const std::string script =
      "import onnx\n"
      "from onnx import helper, TensorProto as T\n"
      "g = helper.make_graph([helper.make_node('Greater', ['x', 'y'], ['c'], name='gt'),\n"
      "    helper.make_node('Where', ['c', 'x', 'y'], ['z'], name='pick')], 'g',\n"
      "    [helper.make_tensor_value_info('x', T.FLOAT, [2, 4]),\n"
      "     helper.make_tensor_value_info('y', T.FLOAT, [2, 4])],\n"
      "    [helper.make_tensor_value_info('z', T.FLOAT, [2, 4])])\n"
      "onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), '" +
      file.string() + "')\n";
  const std::string command = "/usr/bin/python3 -c \"" + script + "\" >/dev/null 2>&1";
  if (std::system("/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1") != 0 ||
      std::system(command.c_str()) != 0) {
    remove_scratch(file);
    GTEST_SKIP() << "/usr/bin/python3 cannot import onnx";
  }
  Graph g;
  std::string message;
  try {
    g = import_onnx(file);
  } catch (const InputError& e) {
    message = e.what();
  }
  remove_scratch(file);
  ASSERT_EQ(message, "");
  const Node* compare = nullptr;
  const Node* where = nullptr;
  for (const auto& [id, n] : g.nodes()) {
    if (n.op.type == OpType::Compare) compare = &n;
    if (n.op.type == OpType::Where) where = &n;
  }
  ASSERT_TRUE(compare && where);
  EXPECT_EQ(compare->op.attrs.get_string("comparison"), "greater");
  EXPECT_EQ(compare->outputs.at(0).dtype, DataType::Bool);
  ASSERT_EQ(where->inputs.size(), 3u);
  EXPECT_EQ(where->inputs[0], compare->output());
  EXPECT_EQ(where->outputs.at(0).sizes(), (std::vector<std::int64_t>{2, 4}));
}

// Llama's attention as plain PyTorch writes it (tests/data/onnx/make_small_models.py,
// llama_attention): 4 query heads over 2 key/value heads repeated by expand and reshape, rotary
// embeddings of base 500000 by rotate_half, the causal mask. One MultiHeadAttention holds all of
// it, its tables gone; an interleaved rotation (another formula than MultiHeadAttention's) keeps
// the pieces.
TEST(OnnxGptImport, LlamaAttentionIsOneGroupedQueryRotaryAttention) {
  const Graph g = import_onnx(data("llama_attention.onnx"), {.batch_size = 2});
  const auto found = attentions(g);
  ASSERT_EQ(found.size(), 1u);
  const Operator& op = found.front()->op;
  EXPECT_EQ(op.attrs.get_int("num_heads"), 4);
  EXPECT_EQ(op.attrs.get_int("num_kv_heads"), 2);
  EXPECT_EQ(op.attrs.get_int("rotary"), 1);
  EXPECT_DOUBLE_EQ(op.attrs.get_double("rotary_base"), 500000.0);
  EXPECT_EQ(op.attrs.get_int("causal"), 1);
  EXPECT_EQ(g.count(OpType::Weight), 4);  // w_q, w_k, w_v, w_o: no tables, no mask
  EXPECT_EQ(g.shape(found.front()->inputs[4]).sizes(), (std::vector<std::int64_t>{16, 8}));

  const Graph pieces = import_onnx(data("llama_attention_interleaved.onnx"), {.batch_size = 2});
  EXPECT_TRUE(attentions(pieces).empty());
  EXPECT_EQ(pieces.count(OpType::Softmax), 1);
}

}  // namespace
}  // namespace unity
