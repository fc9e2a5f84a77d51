// The model zoo: every paper model builds, validates, ends in its loss, and has the parameter and
// operator counts of the real architecture (torchvision, BERT-Large, the paper's section 6.1).
#include <gtest/gtest.h>

#include <tuple>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/zoo/model_loader.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/core/zoo/scaled_zoo.h"

namespace unity {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

std::int64_t count_if_op(const Graph& g, OpType type, std::int64_t groups) {
  std::int64_t n = 0;
  for (const auto& [id, node] : g.nodes()) {
    if (node.op.type == type && node.op.attrs.get_int("groups", 1) == groups) ++n;
  }
  return n;
}

bool is_loss(OpType t) { return t == OpType::SoftmaxCrossEntropy || t == OpType::MSELoss; }

TEST(ModelZoo, ListsThePaperModelsWithTheirPerDeviceBatches) {
  const std::map<std::string, std::int64_t> expected = {
      {"mlp", 256},      {"mnist-mlp", 64}, {"resnext50", 64}, {"inception-v3", 64},
      {"bert-large", 4}, {"dlrm", 1024},    {"xdl", 1024},     {"candle-uno", 256}};
  std::map<std::string, std::int64_t> listed;
  for (const zoo::ModelInfo& m : zoo::models()) {
    if (!m.family.empty()) continue;  // the decoder families: DecoderFamiliesAreListed
    listed[m.name] = m.default_batch;
    EXPECT_TRUE(zoo::has_model(m.name));
    EXPECT_NE(m.description.find("batch " + std::to_string(m.default_batch) + " per device"),
              std::string::npos)
        << m.name << ": " << m.description;
  }
  EXPECT_EQ(listed, expected);
  EXPECT_FALSE(zoo::has_model("resnet50"));
}

TEST(ModelZoo, EveryModelBuildsValidatesAndEndsInOneLoss) {
  for (const zoo::ModelInfo& m : zoo::models()) {
    SCOPED_TRACE(m.name);
    const Graph g = zoo::build(m.name);
    EXPECT_EQ(g.name, m.name);
    EXPECT_EQ(g.batch_size, m.default_batch);
    EXPECT_NO_THROW(g.validate());
    EXPECT_EQ(g.count(OpType::SoftmaxCrossEntropy) + g.count(OpType::MSELoss), 1);
    const std::vector<TensorRef> sinks = g.sinks();
    ASSERT_EQ(sinks.size(), 1u) << "every output but the loss must be consumed";
    EXPECT_TRUE(is_loss(g.node(sinks[0].node).op.type));
    std::set<std::string> names;
    for (const auto& [id, node] : g.nodes()) {
      EXPECT_FALSE(node.op.name.empty()) << g.describe(id);
      EXPECT_TRUE(names.insert(node.op.name).second) << "duplicate name " << node.op.name;
      EXPECT_TRUE(node.outputs.empty() || node.outputs[0].is_serial()) << g.describe(id);
      if (is_parallel_op(node.op.type)) ADD_FAILURE() << "parallel op in a zoo model";
    }
  }
}

TEST(ModelZoo, BuildingIsDeterministic) {
  for (const zoo::ModelInfo& m : zoo::models()) {
    EXPECT_EQ(zoo::build(m.name).structural_hash(), zoo::build(m.name).structural_hash()) << m.name;
  }
}

// Zoo models are what users save and reopen most: the JSON format must carry them unchanged.
TEST(ModelZoo, EveryModelRoundTripsThroughJson) {
  for (const zoo::ModelInfo& m : zoo::models()) {
    SCOPED_TRACE(m.name);
    const Graph g = zoo::build(m.name);
    const Graph back = graph_from_json(graph_to_json(g));
    EXPECT_EQ(back.name, g.name);
    EXPECT_EQ(back.batch_size, g.batch_size);
    EXPECT_EQ(back.size(), g.size());
    EXPECT_EQ(back.structural_hash(), g.structural_hash());
    EXPECT_EQ(back.parameter_count(), g.parameter_count());
  }
}

TEST(ModelZoo, BatchOverrideChangesEveryInputsSampleDim) {
  for (const zoo::ModelInfo& m : zoo::models()) {
    SCOPED_TRACE(m.name);
    const std::int64_t batch = m.default_batch == 2 ? 3 : 2;
    const Graph g = zoo::build(m.name, batch);
    EXPECT_EQ(g.batch_size, batch);
    EXPECT_NO_THROW(g.validate());
    EXPECT_NE(g.structural_hash(), zoo::build(m.name).structural_hash());
    for (const auto& [id, node] : g.nodes()) {
      if (node.op.type == OpType::Input) {
        EXPECT_EQ(node.outputs.at(0).dims.at(0).size, batch) << node.op.name;
      }
    }
  }
  EXPECT_EQ(zoo::build("resnext50", 0).batch_size, 64);  // <= 0: the default
  EXPECT_EQ(zoo::build("resnext50", -3).batch_size, 64);
}

TEST(ModelZoo, UnknownNameThrowsInputErrorListingTheKnownNames) {
  try {
    zoo::build("resnet-9000");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("resnet-9000"), std::string::npos);
    for (const zoo::ModelInfo& m : zoo::models()) EXPECT_NE(what.find(m.name), std::string::npos);
  }
}

// A model name two edits or fewer from a zoo model's (any case) is answered with that name; a
// name far from all of them only with the list.
TEST(ModelZoo, MistypedNameSuggestsTheNearestModel) {
  auto message = [](const std::string& spec) {
    try {
      load_model(spec);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message("Llama3-8B").find("did you mean 'llama3-8b'?"), std::string::npos);
  EXPECT_NE(message("gpt-1.7").find("did you mean 'gpt-1.7b'?"), std::string::npos);
  const std::string far = message("resnet-9000");
  EXPECT_NE(far.find("is neither a model file"), std::string::npos) << far;
  EXPECT_EQ(far.find("did you mean"), std::string::npos) << far;
}

// Paper Figure 1: communication of data parallelism is 2*(ci*h + h*co) elements.
TEST(ModelZoo, MnistMlpIsThePapersFigure1) {
  const Graph g = zoo::build("mnist-mlp");
  EXPECT_EQ(g.parameter_count(), 784 * 512 + 512 * 10);
  EXPECT_EQ(g.parameter_count(), 406528);
  EXPECT_EQ(2 * g.weight_bytes(), 813056 * 4);
  std::multiset<std::vector<std::int64_t>> weights;
  for (const auto& [id, node] : g.nodes()) {
    if (node.op.type == OpType::Weight) weights.insert(node.outputs.at(0).sizes());
  }
  EXPECT_EQ(weights, (std::multiset<std::vector<std::int64_t>>{{784, 512}, {512, 10}}));
  EXPECT_EQ(g.count(OpType::Linear), 2);
  EXPECT_EQ(g.count(OpType::Relu), 1);
  EXPECT_EQ(g.count(OpType::Input), 2);
  EXPECT_EQ(g.size(), 2u + 2u + 2u + 1u + 1u);  // inputs, weights, linears, relu, loss
}

TEST(ModelZoo, MlpHas16DenseLayersOf8192) {
  const Graph g = zoo::build("mlp");
  EXPECT_EQ(g.count(OpType::Linear), 16);
  EXPECT_EQ(g.count(OpType::Relu), 15);
  EXPECT_EQ(g.parameter_count(), 16 * 8192LL * 8192 + 16 * 8192);
}

TEST(ModelZoo, ResNeXt50MatchesTorchvision) {
  const Graph g = zoo::build("resnext50");
  EXPECT_EQ(g.parameter_count(), 25028904);  // torchvision resnext50_32x4d, BN scale+bias included
  EXPECT_EQ(g.count(OpType::Conv2D), 53);    // stem + 16 blocks x 3 + 4 projections
  EXPECT_EQ(count_if_op(g, OpType::Conv2D, 32), 16);
  EXPECT_EQ(g.count(OpType::BatchNorm), 53);
  EXPECT_EQ(g.count(OpType::Relu), 49);
  EXPECT_EQ(g.count(OpType::Add), 16);
  EXPECT_EQ(g.count(OpType::Linear), 1);
  for (const auto& [id, node] : g.nodes()) {
    if (node.op.type == OpType::Input && node.op.name == "image") {
      EXPECT_EQ(node.outputs.at(0).sizes(), (std::vector<std::int64_t>{64, 3, 224, 224}));
    }
    if (node.op.type == OpType::Linear) {
      EXPECT_EQ(node.outputs.at(0).sizes(), (std::vector<std::int64_t>{64, 1000}));
    }
  }
}

TEST(ModelZoo, InceptionV3MatchesTorchvision) {
  const Graph g = zoo::build("inception-v3");
  EXPECT_EQ(g.parameter_count(), 23834568);  // torchvision inception_v3 minus its AuxLogits
  EXPECT_EQ(g.count(OpType::Conv2D), 94);
  EXPECT_EQ(g.count(OpType::BatchNorm), 94);
  EXPECT_EQ(g.count(OpType::Relu), 94);
  EXPECT_EQ(g.count(OpType::Concat), 11 + 4);  // one per mixed block + two inside each E block
  EXPECT_EQ(g.count(OpType::Linear), 1);
  for (const auto& [id, node] : g.nodes()) {
    if (node.op.type == OpType::BatchNorm) {
      EXPECT_DOUBLE_EQ(node.op.attrs.get_double("epsilon"), 1e-3);  // torchvision's BasicConv2d
    }
    if (node.op.name == "Mixed_7c.concat") {
      EXPECT_EQ(node.outputs.at(0).sizes(), (std::vector<std::int64_t>{64, 2048, 8, 8}));
    }
    if (node.op.name == "Mixed_6a.concat") {
      EXPECT_EQ(node.outputs.at(0).sizes(), (std::vector<std::int64_t>{64, 768, 17, 17}));
    }
  }
}

TEST(ModelZoo, BertLargeHas24LayersAnd335MParameters) {
  const Graph g = zoo::build("bert-large");
  EXPECT_EQ(g.count(OpType::MultiHeadAttention), 24);
  EXPECT_EQ(g.count(OpType::LayerNorm), 1 + 2 * 24);
  EXPECT_EQ(g.count(OpType::Gelu), 24);
  EXPECT_EQ(g.count(OpType::Embedding), 3);
  EXPECT_GE(g.parameter_count(), 320'000'000);
  EXPECT_LE(g.parameter_count(), 345'000'000);
  for (const auto& [id, node] : g.nodes()) {
    if (node.op.type == OpType::MultiHeadAttention) {
      EXPECT_EQ(node.op.attrs.get_int("num_heads"), 16);
      EXPECT_EQ(node.outputs.at(0).sizes(), (std::vector<std::int64_t>{4, 512, 1024}));
    }
  }
}

TEST(ModelZoo, DlrmExceedsOne16GBGpuAndConcatsItsEmbeddings) {
  const Graph g = zoo::build("dlrm");
  EXPECT_GT(2 * g.weight_bytes(), 16 * kGiB);  // weights + gradients (paper 6.2)
  EXPECT_EQ(g.count(OpType::EmbeddingBag), 26);
  ASSERT_EQ(g.count(OpType::Concat), 1);
  for (const auto& [id, node] : g.nodes()) {
    if (node.op.type == OpType::Concat) {
      EXPECT_EQ(node.inputs.size(), 27u);
      EXPECT_EQ(node.outputs.at(0).sizes(), (std::vector<std::int64_t>{1024, 27 * 64}));
    }
  }
  EXPECT_EQ(g.count(OpType::Sigmoid), 1);
  EXPECT_EQ(g.count(OpType::MSELoss), 1);
}

TEST(ModelZoo, XdlHasLargeSparseTablesButFitsForDataParallelism) {
  const Graph g = zoo::build("xdl");
  EXPECT_EQ(g.count(OpType::EmbeddingBag), 26);
  EXPECT_EQ(g.count(OpType::Concat), 1);
  EXPECT_EQ(g.count(OpType::Linear), 4);
  EXPECT_GT(g.weight_bytes(), 4'000'000'000);  // 26 Criteo tables x 32 dims
  EXPECT_LT(2 * g.weight_bytes(), 16 * kGiB);  // the paper runs it data-parallel
}

TEST(ModelZoo, CandleUnoExceedsOne16GBGpu) {
  const Graph g = zoo::build("candle-uno");
  EXPECT_GT(2 * g.weight_bytes(), 16 * kGiB);
  EXPECT_EQ(g.count(OpType::Linear), 5 * 8 + 4 + 1);
  EXPECT_EQ(g.count(OpType::Concat), 1);
  EXPECT_EQ(g.count(OpType::MSELoss), 1);
  EXPECT_EQ(g.count(OpType::Input), 8);  // seven features and the label
}

// The reduced models (scaled_zoo.h) are the zoo's builders with their sizes as parameters: at scale
// 1 each must be the zoo's model, node for node and in the same order (only the name may differ).
TEST(ModelZoo, EveryScalableModelAtScaleOneIsTheZoosModel) {
  for (const auto& name : zoo::scalable_models()) {
    nlohmann::json full = graph_to_json(zoo::build(name, 8));
    nlohmann::json scaled = graph_to_json(zoo::build_scaled(name, 8, 1.0));
    full.erase("name");
    scaled.erase("name");
    EXPECT_EQ(scaled, full) << name;
  }
}

// Megatron-LM's Table 1 models and Llama 2: parameters by the published formulas.
TEST(ModelZoo, DecoderFamiliesAreListed) {
  std::map<std::string, std::string> family;
  for (const zoo::ModelInfo& m : zoo::models())
    if (!m.family.empty()) family[m.name] = m.family;
  for (const char* name : {"gpt-1.7b", "gpt-3.6b", "gpt-7.5b", "gpt-18b", "gpt-39b", "gpt-76b",
                           "gpt-145b", "gpt-310b", "gpt-530b", "gpt-1t", "gpt-tiny"})
    EXPECT_EQ(family[name], "gpt") << name;
  for (const char* name : {"llama-7b", "llama-13b", "llama-70b", "llama-tiny", "llama3-8b",
                           "llama3-70b", "llama3-405b"})
    EXPECT_EQ(family[name], "llama") << name;
  // Megatron-LM's P = 12 l h^2 (1 + 13 / (12 h) + (V + s) / (12 l h)) less the attention's 4h
  // biases a layer (our attention has none, as the zoo's BERT), plus the final norm (2h) and our
  // untied head (V h).
  const auto gpt_params = [](double l, double h) {
    return l * (12 * h * h + 9 * h) + (51200.0 + 2048) * h + 2 * h + 51200 * h;
  };
  for (auto [name, l, h] :
       {std::tuple{"gpt-1.7b", 24, 2304}, {"gpt-145b", 80, 12288}, {"gpt-1t", 128, 25600}}) {
    const Graph g = zoo::build(name, 1);
    EXPECT_NEAR(static_cast<double>(g.parameter_count()), gpt_params(l, h), 1e-9 * gpt_params(l, h))
        << name;
    EXPECT_EQ(g.shape(g.sinks().front()).dtype, DataType::Float16);
  }
  EXPECT_EQ(zoo::build("llama-7b", 1).parameter_count(), 6'738'415'616);
}

TEST(ModelZoo, FamilyMembersResize) {
  zoo::TransformerResize r;
  r.layers = 3;
  r.hidden = 128;
  r.heads = 8;
  r.seq = 16;
  r.vocab = 100;
  const Graph g = zoo::build("gpt-1.7b", 2, r);
  EXPECT_EQ(g.count(OpType::MultiHeadAttention), 3);
  EXPECT_NO_THROW(g.validate());
  // 3 layers of 12 h^2 + 9 h, embeddings (V + s) h, final norm 2h, head V h.
  EXPECT_EQ(g.parameter_count(),
            3 * (12 * 128 * 128 + 9 * 128) + (100 + 16) * 128 + 2 * 128 + 100 * 128);
  EXPECT_THROW(zoo::build("resnext50", 2, r), InputError);
  zoo::TransformerResize bad;
  bad.heads = 7;  // does not divide 2304
  EXPECT_THROW(zoo::build("gpt-1.7b", 2, bad), InputError);
}

// The published shapes whose FFN does not follow the hidden size, and grouped-query attention in
// either family: --ffn and --kv-heads.
TEST(ModelZoo, FamilyMembersTakeTheirFfnAndKeyValueHeads) {
  const zoo::TransformerResize r{
      .layers = 2, .hidden = 128, .heads = 8, .seq = 16, .vocab = 100, .ffn = 300, .kv_heads = 2};
  // gpt: per layer w_q, w_o h^2 each, w_k, w_v h x h/4 each, fc1 and fc2 h x 300 with biases 300
  // and h, two LayerNorms 4h.
  const std::int64_t h = 128, kv = 128 / 8 * 2;
  const Graph g = zoo::build("gpt-1.7b", 2, r);
  EXPECT_NO_THROW(g.validate());
  EXPECT_EQ(g.parameter_count(), 2 * (2 * h * h + 2 * h * kv + 2 * h * 300 + 300 + h + 4 * h) +
                                     (100 + 16) * h + 2 * h + 100 * h);
  EXPECT_NE(g.name.find("ffn=300"), std::string::npos) << g.name;
  // llama: SwiGLU's three h x ffn projections, no biases, two RMSNorms 2h.
  const Graph l = zoo::build("llama-7b", 2, r);
  EXPECT_EQ(l.parameter_count(),
            2 * (2 * h * h + 2 * h * kv + 3 * h * 300 + 2 * h) + 100 * h + h + 100 * h);

  zoo::TransformerResize bad = r;
  bad.kv_heads = 3;  // does not divide 8 heads
  EXPECT_THROW(
      {
        try {
          zoo::build("llama-7b", 2, bad);
        } catch (const InputError& e) {
          EXPECT_STREQ(e.what(), "--kv-heads 3: must divide the 8 attention heads");
          throw;
        }
      },
      InputError);
}

// Llama 3's published shapes (Meta, "The Llama 3 Herd of Models", Table 3) and parameter counts
// (the released checkpoints: 8,030,261,248; 70,553,706,496; 405,853,388,800).
TEST(ModelZoo, Llama3MembersHaveThePublishedParameterCounts) {
  EXPECT_EQ(zoo::build("llama3-8b", 1).parameter_count(), 8'030'261'248);
  EXPECT_EQ(zoo::build("llama3-70b", 1).parameter_count(), 70'553'706'496);
  EXPECT_EQ(zoo::build("llama3-405b", 1).parameter_count(), 405'853'388'800);
}

}  // namespace
}  // namespace unity
