// Hugging Face config.json files as models: the published configs in models/hf/ read into their
// sizes, counted to their published parameter counts and built into graphs that hold them; the
// mixture-of-experts ones read, counted and built (DeepSeek-V2 and V3 with latent attention);
// malformed, contradictory and unknown configs refused with the field and the supported
// architectures named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>

#include <unistd.h>

#include "unity/core/errors.h"
#include "unity/core/hf/hf_config.h"
#include "unity/core/hf/hf_model.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/plan/model_shape.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/model_loader.h"
#include "unity/core/zoo/model_zoo.h"

namespace unity::hf_config_test {
namespace {

namespace fs = std::filesystem;
using hf::HfConfig;
using nlohmann::json;

std::string published_config(const std::string& name) {
  return (std::filesystem::path(UNITY_SOURCE_DIR) / "models" / "hf" / name / "config.json")
      .string();
}

// Each published config with the parameter count its model card (or paper) publishes and the
// count of its transformers class, computed module by module by hand (embeddings + layers x
// (attention + MLP + norms) + final norm + untied head).
struct Published {
  const char* name;
  double published;      // what the source says
  std::int64_t exact;    // the transformers class's count
  std::int64_t missing;  // what the graph leaves out: q/k/v biases and q/k norms
  const char* source;
  // Half a unit of the published figure's last digit where it is rounded more coarsely than 0.1%
  // (30.5B), else 0.
  double rounding = 0;
};

// Within 0.1% of the published figure, or within its rounding.
void expect_published(std::int64_t count, const Published& p) {
  EXPECT_LE(std::abs(static_cast<double>(count) - p.published),
            std::max(0.001 * p.published, p.rounding))
      << p.name << ": " << count << " against " << p.published << " (" << p.source << ")";
}

const Published kDense[] = {
    // Hugging Face's safetensors count on the model page (8,030,261,248).
    {"Llama-3.1-8B", 8030261248.0, 8030261248, 0, "meta-llama/Llama-3.1-8B model page"},
    {"Llama-3.1-70B", 70553706496.0, 70553706496, 0, "meta-llama/Llama-3.1-70B model page"},
    // Mistral AI's release: 7.24B; the model page's safetensors count 7,241,732,096.
    {"Mistral-7B-v0.1", 7241732096.0, 7241732096, 0, "mistralai/Mistral-7B-v0.1 model page"},
    // Model card: "Number of Parameters: 7.61B" (non-embedding 6.53B). Biases on q, k and v:
    // 28 x (3584 + 2 x 512).
    {"Qwen2.5-7B", 7.61e9, 7615616512, 28 * (3584 + 2 * 512), "Qwen/Qwen2.5-7B model card"},
    // Model page 8.19B (the card rounds to 8.2B; non-embedding 6.95B). q/k norms: 36 x 2 x 128.
    {"Qwen3-8B", 8.19e9, 8190735360, 36 * 2 * 128, "Qwen/Qwen3-8B model page and card"},
    // Model page: 9.24B (Gemma 2 report, Table 1: 8,324M non-embedding + 918M embedding).
    {"gemma-2-9b", 9.24e9, 9241705984, 0, "google/gemma-2-9b model page"},
    // Gemma 3 report, Table 1: 12B has 10,759M non-embedding and 1,012M embedding parameters
    // (the latter with the vision projection, which Gemma3ForCausalLM has not). q/k norms: 48 x
    // 2 x 256.
    {"gemma-3-12b", 11771e6, 11766034176, 48 * 2 * 256, "Gemma 3 Technical Report, Table 1"},
    // Model card: 3.8B; the model page's safetensors count 3,821,079,552.
    {"Phi-3-mini-4k-instruct", 3821079552.0, 3821079552, 0, "microsoft/Phi-3-mini-4k-instruct"},
    // GPT-2 small: 124M (Radford et al. 2019 report 117M with a smaller count; Hugging Face's
    // gpt2 holds 124,439,808). c_attn's bias: 12 x 3 x 768.
    {"gpt2", 124439808.0, 124439808, 12 * 3 * 768, "openai-community/gpt2 model page"},
    // Pythia paper (Biderman et al. 2023), Table 1: 1,011,781,632 total parameters.
    {"pythia-1b", 1011781632.0, 1011781632, 16 * 3 * 2048, "Pythia, Table 1"},
    // GPT-NeoX-20B paper (Black et al. 2022), Table 1: 20,554,567,680 parameters.
    {"gpt-neox-20b", 20554567680.0, 20554567680, 44 * 3 * 6144, "GPT-NeoX-20B, Table 1"},
    // Model page: 2.78B (the card: "2.7 billion"). One LayerNorm a layer for both parallel
    // branches; not held by the graph: q, k and v's biases, 32 x 3 x 2,560, and the head's, 51,200.
    {"phi-2", 2.78e9, 2779683840, 32 * 3 * 2560 + 51200, "microsoft/phi-2 model page", 0.005e9},
    // Model page: 9.4B. Gemma 2's four norms a layer, biases on q, k and v (not held by the
    // graph: 40 x (4,096 + 2 x 256)), half of each head rotated, an untied head.
    {"GLM-4-9B-0414", 9.4e9, 9400279040, 40 * (4096 + 2 * 256), "zai-org/GLM-4-9B-0414 model page",
     0.05e9},
    // Gemma report (Gemma Team 2024), Table 2: 7B has 7,751,248,896 non-embedding and 786,432,000
    // embedding parameters.
    {"gemma-7b", 8537680896.0, 8537680896, 0, "Gemma: Open Models..., Table 2"},
    // Model page: 7.17B. Its tied head; biases everywhere, of which the graph leaves out q, k and
    // v's: 32 x (4,608 + 2 x 512).
    {"starcoder2-7b", 7.17e9, 7173923840, 32 * (4608 + 2 * 512), "bigcode/starcoder2-7b model page",
     0.005e9},
    // Model page: 7.3B. Not held by the graph: the q and k norms over the whole projections, 32 x
    // 2 x 4,096.
    {"OLMo-2-1124-7B", 7.3e9, 7298617344, 32 * 2 * 4096, "allenai/OLMo-2-1124-7B model page",
     0.05e9},
    // Model page: 8.17B. Llama's block with grouped-query attention and a tied head; its
    // multipliers are scalars, no parameters.
    {"granite-3.0-8b-base", 8.17e9, 8170848256, 0, "ibm-granite/granite-3.0-8b-base model page",
     0.005e9},
};

const Published kMoe[] = {
    // Mixtral of Experts (Jiang et al. 2024): 47B total (the model page: 46.7B).
    {"Mixtral-8x7B-v0.1", 46.7e9, 46702792704, 0, "mistralai/Mixtral-8x7B-v0.1 model page"},
    // Model card: 30.5B total, 3.3B activated (29.9B non-embedding): rounded to 0.1B, so within
    // its rounding rather than 0.1%.
    // q/k norms: 48 x 2 x 128.
    {"Qwen3-30B-A3B", 30.5e9, 30532122624, 48 * 2 * 128, "Qwen/Qwen3-30B-A3B model card", 0.05e9},
    // DeepSeek-V3 Technical Report: 671B total (685B on the model page with the 14B
    // multi-token-prediction module, which is not counted here). Not held by the graph: the
    // routers' score corrections, 58 x 256.
    {"DeepSeek-V3", 671e9, 671026419200, 58 * 256, "DeepSeek-V3 Technical Report"},
    // gpt-oss model card (OpenAI 2025), Table 1: 20.91B total parameters.
    // Not held by the graph: the q, k, v biases 24 x (4,096 + 2 x 512), the attention sinks
    // 24 x 64, the experts' biases 24 x 32 x (2 x 2,880 + 2,880) and the router's 24 x 32.
    {"gpt-oss-20b", 20.91e9, 20914757184, 24 * 5120 + 24 * 64 + 24 * 32 * 8640 + 24 * 32,
     "gpt-oss-120b & gpt-oss-20b Model Card, Table 1"},
    // Model page: 14.3B (2.7B activated). A shared expert 5,632 wide beside 60 of 1,408. Not held
    // by the graph: the q, k, v biases 24 x 3 x 2,048 and the shared expert's gate 24 x 2,048.
    {"Qwen1.5-MoE-A2.7B", 14.3e9, 14315784192, 24 * 3 * 2048 + 24 * 2048,
     "Qwen/Qwen1.5-MoE-A2.7B model page", 0.05e9},
    // Model page: 57.4B (Qwen2 Technical Report: 57B, 14B activated). Not held by the graph: the
    // q, k, v biases 28 x (3,584 + 2 x 512) and the shared expert's gate 28 x 3,584.
    {"Qwen2-57B-A14B", 57.4e9, 57408658944, 28 * (3584 + 2 * 512) + 28 * 3584,
     "Qwen/Qwen2-57B-A14B model page", 0.05e9},
    // Model page: 6.92B (OLMoE paper: 6.9B total, 1.3B active). Not held by the graph: the q and k
    // norms over the whole projections, 16 x 2 x 2,048.
    {"OLMoE-1B-7B-0924", 6.92e9, 6919161856, 16 * 2 * 2048, "allenai/OLMoE-1B-7B-0924 model page",
     0.005e9},
    // Model page: 41.9B (model card: 6.6B active). Not held by the graph: the q, k, v biases 32 x
    // (4,096 + 2 x 1,024) and the head's bias, 32,064.
    {"Phi-3.5-MoE-instruct", 41.9e9, 41873153344, 32 * (4096 + 2 * 1024) + 32064,
     "microsoft/Phi-3.5-MoE-instruct model page", 0.05e9},
};

TEST(HfConfig, DenseConfigsCountAndBuildThePublishedParameters) {
  for (const auto& p : kDense) {
    SCOPED_TRACE(p.name);
    const HfConfig c = hf::read_hf_config(published_config(p.name));
    EXPECT_EQ(c.name, p.name);
    EXPECT_FALSE(c.moe);
    EXPECT_EQ(hf::parameter_count(c), p.exact) << p.source;
    expect_published(p.exact, p);
    zoo::TransformerResize short_sequence;
    short_sequence.seq = 64;  // the parameters do not depend on it (GPT-2's table has 1024 rows)
    const Graph g = hf::build_hf_model(c, 1, short_sequence);
    EXPECT_EQ(g.parameter_count(), p.exact - p.missing);
    expect_published(g.parameter_count(), p);
  }
}

// The MoE configs build as routers and Experts operators (DeepSeek-V3's attention as
// LatentAttention).
TEST(HfConfig, MixtureOfExpertsConfigsCountAndBuildThePublishedParameters) {
  for (const auto& p : kMoe) {
    SCOPED_TRACE(p.name);
    const HfConfig c = hf::read_hf_config(published_config(p.name));
    ASSERT_TRUE(c.moe);
    EXPECT_EQ(hf::parameter_count(c), p.exact) << p.source;
    expect_published(p.exact, p);
    zoo::TransformerResize short_sequence;
    short_sequence.seq = 64;
    const Graph g = hf::build_hf_model(c, 1, short_sequence);
    EXPECT_EQ(g.count(OpType::LatentAttention) > 0, c.mla.has_value());
    EXPECT_EQ(g.parameter_count(), p.exact - p.missing);
    expect_published(g.parameter_count(), p);
  }
}

// Active parameters: the weights one token runs through (top-k of each layer's experts).
TEST(HfConfig, MixtureOfExpertsActiveParameters) {
  zoo::TransformerResize short_sequence;
  short_sequence.seq = 64;
  // Mixtral of Experts (Jiang et al. 2024): 13B active (the model page: 12.9B).
  const Graph mixtral = hf::build_hf_model(
      hf::read_hf_config(published_config("Mixtral-8x7B-v0.1")), 1, short_sequence);
  EXPECT_NEAR(static_cast<double>(mixtral.active_parameter_count()), 12.9e9, 0.05e9);
  // Qwen3-30B-A3B model card: 3.3B activated (cut, not rounded, to the tenth: 3.35B here).
  const Graph qwen =
      hf::build_hf_model(hf::read_hf_config(published_config("Qwen3-30B-A3B")), 1, short_sequence);
  EXPECT_NEAR(static_cast<double>(qwen.active_parameter_count()), 3.35e9, 0.005e9);
  // gpt-oss model card, Table 1: 3.61B active for gpt-oss-20b, counted without the embedding
  // table (a lookup, no arithmetic): 201,088 x 2,880 more here.
  const Graph oss =
      hf::build_hf_model(hf::read_hf_config(published_config("gpt-oss-20b")), 1, short_sequence);
  EXPECT_NEAR(static_cast<double>(oss.active_parameter_count() - 201088LL * 2880), 3.61e9, 0.01e9);
  // With their embeddings, as each publishes it: Qwen1.5-MoE-A2.7B 2.7B activated (its model
  // card), Qwen2-57B-A14B 14B (the Qwen2 Technical Report, to the billion), OLMoE 1.3B active (its
  // paper), Phi-3.5-MoE 6.6B active (its model card).
  for (const auto& [name, active, rounding] :
       {std::tuple{"Qwen1.5-MoE-A2.7B", 2.7e9, 0.05e9}, std::tuple{"Qwen2-57B-A14B", 14e9, 0.5e9},
        std::tuple{"OLMoE-1B-7B-0924", 1.3e9, 0.05e9},
        std::tuple{"Phi-3.5-MoE-instruct", 6.6e9, 0.05e9}}) {
    const Graph g =
        hf::build_hf_model(hf::read_hf_config(published_config(name)), 1, short_sequence);
    EXPECT_NEAR(static_cast<double>(g.active_parameter_count()), active, rounding) << name;
  }
  // DeepSeek-V3 Technical Report: 37B activated; as the zoo's deepseek-v3 counts it.
  const Graph deepseek =
      hf::build_hf_model(hf::read_hf_config(published_config("DeepSeek-V3")), 1, short_sequence);
  EXPECT_EQ(deepseek.active_parameter_count(), 37552282624);
  EXPECT_EQ(deepseek.parameter_count(),
            zoo::build("deepseek-v3", 1, short_sequence).parameter_count());
}

// GLM-4.5-Air (Glm4MoeForCausalLM): DeepSeek-V3's MoE layer (128 routed experts of 1,408, one
// shared, the first layer dense, sigmoid scores with a score correction) behind grouped-query
// attention with biases on q, k and v and half of each head rotated. Its transformers class counts
// 46 x (attention 4,096 x 12,288 x 2 + 2 x 4,096 x 1,024 + 14,336 biases, 2 norms) + the dense
// MLP 3 x 4,096 x 10,944 + 45 x (129 experts x 3 x 4,096 x 1,408 + router 4,096 x 128 + 128) +
// the embedding, the head (151,552 x 4,096 each) and the final norm: 106,852,251,264. The GLM-4.5
// report's "106B total, 12B activated" are without the embedding and the head (105.6B, 12.2B),
// rounded to the billion.
TEST(HfConfig, Glm45AirCountsAsItsReport) {
  const HfConfig c = hf::read_hf_config(published_config("GLM-4.5-Air"));
  ASSERT_TRUE(c.moe);
  EXPECT_EQ(c.moe->experts, 128);
  EXPECT_EQ(c.moe->shared_experts, 1);
  EXPECT_EQ(c.moe->dense_layers_first, 1);
  EXPECT_TRUE(c.moe->sigmoid_scores && c.moe->score_correction && c.moe->normalize_top_k);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.out_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_DOUBLE_EQ(c.rotary_fraction, 0.5);
  EXPECT_EQ(hf::parameter_count(c), 106852251264);
  zoo::TransformerResize short_sequence;
  short_sequence.seq = 64;
  const Graph g = hf::build_hf_model(c, 1, short_sequence);
  // Not held by the graph: the q, k, v biases and the routers' score corrections.
  EXPECT_EQ(g.parameter_count(), 106852251264 - 46 * 14336 - 45 * 128);
  const double tables = 2.0 * 151552 * 4096;
  EXPECT_NEAR(static_cast<double>(g.parameter_count()) - tables, 106e9, 0.5e9);
  EXPECT_NEAR(static_cast<double>(g.active_parameter_count()) - tables, 12e9, 0.5e9);
}

// MiniMax-M2 (MiniMaxM2ForCausalLM): Mixtral's layer of 256 experts 1,536 wide on all 62 layers,
// under a sigmoid router with a score correction, renormalised; grouped-query attention of 48
// heads of 128 with 8 key/value heads, RMSNorm over the whole q and k projections, 64 of each
// head's 128 rotated (rotary_dim). Counted as its checkpoint holds it (the score corrections too,
// as for DeepSeek-V3 and GLM-4.5): 62 x (attention 2 x 3,072 x 6,144 + 2 x 3,072 x 1,024, q/k
// norms 6,144 + 1,024, 2 norms of 3,072, router 3,072 x 256 + 256, experts 256 x 3 x 3,072 x
// 1,536) + the embedding and the head (200,064 x 3,072 each) + the final norm: 228,689,764,864;
// the model card says 230B total and 10B active (without the tables: 9.8B here).
TEST(HfConfig, MiniMaxM2CountsAsItsModelCard) {
  const HfConfig c = hf::read_hf_config(published_config("MiniMax-M2"));
  ASSERT_TRUE(c.moe);
  EXPECT_EQ(c.moe->experts, 256);
  EXPECT_EQ(c.moe->experts_per_token, 8);
  EXPECT_EQ(c.moe->expert_ffn, 1536);
  EXPECT_EQ(c.moe->shared_experts, 0);
  EXPECT_TRUE(c.moe->sigmoid_scores && c.moe->score_correction && c.moe->normalize_top_k);
  EXPECT_TRUE(c.qk_norm_whole);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_DOUBLE_EQ(c.rotary_fraction, 0.5);
  EXPECT_EQ(c.rope_theta, 5e6);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(hf::parameter_count(c), 228689764864);
  zoo::TransformerResize short_sequence;
  short_sequence.seq = 64;
  const Graph g = hf::build_hf_model(c, 1, short_sequence);
  // Not held by the graph: the q and k norms over the whole projections, the score corrections.
  EXPECT_EQ(g.parameter_count(), 228689764864 - 62 * (6144 + 1024) - 62 * 256);
  EXPECT_NEAR(static_cast<double>(g.parameter_count()), 230e9, 1.5e9);
  const double tables = 2.0 * 200064 * 3072;
  EXPECT_NEAR(static_cast<double>(g.active_parameter_count()) - tables, 10e9, 0.25e9);
}

// SmolLM3-3B: Llama's layers with grouped-query attention (16 heads, 4 key/value), every fourth
// without rotary (NoPE: no_rope_layers holds a 0 there), a tied head, no sliding window
// (use_sliding_window false). 36 x (2 x 2,048^2 + 2 x 2,048 x 512 + 3 x 2,048 x 11,008 + 2 x
// 2,048) + 2,048 + 128,256 x 2,048 = 3,075,098,624: the model card's 3.08B.
TEST(HfConfig, SmolLM3CountsAsItsModelCard) {
  const HfConfig c = hf::read_hf_config(published_config("SmolLM3-3B"));
  EXPECT_EQ(c.architecture, "SmolLM3ForCausalLM");
  EXPECT_EQ(c.nope_layers, 9);
  EXPECT_EQ(c.nope_interval, 4);
  EXPECT_TRUE(c.tied);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(c.rope_theta, 5e6);
  EXPECT_EQ(hf::parameter_count(c), 3075098624);
  zoo::TransformerResize short_sequence;
  short_sequence.seq = 64;
  const Graph g = hf::build_hf_model(c, 1, short_sequence);
  EXPECT_EQ(g.parameter_count(), 3075098624);
  // What the launch writers read (Megatron-LM's --no-rope-freq 4): the graph's shape with the
  // config's details, as `unity optimize` records it.
  auto shape = model_shape_of(g);
  ASSERT_TRUE(shape);
  add_hf_details(*shape, c);
  EXPECT_EQ(shape->nope_layers, 9);
  EXPECT_EQ(shape->nope_interval, 4);
}

// phi-2: GPT-NeoX's parallel block with one LayerNorm a layer that the attention and the MLP both
// read (33 LayerNorms, not 65), 0.4 of each head rotated; the launch writers see a parallel
// residual with its one norm (ModelShape, kept in the plan file).
TEST(HfConfig, PhiBranchesReadOneNorm) {
  const HfConfig c = hf::read_hf_config(published_config("phi-2"));
  EXPECT_EQ(c.architecture, "PhiForCausalLM");
  EXPECT_TRUE(c.parallel_residual && c.shared_parallel_norm && c.head_bias);
  EXPECT_DOUBLE_EQ(c.rotary_fraction, 0.4);
  EXPECT_EQ(c.activation, "gelu_new");
  zoo::TransformerResize short_sequence;
  short_sequence.seq = 64;
  const Graph g = hf::build_hf_model(c, 1, short_sequence);
  EXPECT_EQ(g.count(OpType::LayerNorm), 33);
  const auto shape = model_shape_of(g);
  ASSERT_TRUE(shape);
  EXPECT_TRUE(shape->parallel_residual);
  EXPECT_TRUE(shape->shared_parallel_norm);
  EXPECT_FALSE(shape->rms_norm);
  const auto pythia = model_shape_of(
      hf::build_hf_model(hf::read_hf_config(published_config("pythia-1b")), 1, short_sequence));
  ASSERT_TRUE(pythia);
  EXPECT_TRUE(pythia->parallel_residual);
  EXPECT_FALSE(pythia->shared_parallel_norm);
}

// Llama 4 (Llama4ForConditionalGeneration: its language model's text_config). Scout: 48 layers of
// attention (5,120 x 5,120 x 2 + 2 x 5,120 x 1,024; its q/k L2 norm has no weights) and 16 routed
// experts with one shared, all 8,192 wide (17 x 3 x 5,120 x 8,192 + a router 5,120 x 16), 2 norms
// a layer, the embedding and the head (202,048 x 5,120 each): 107,769,861,120, and "17B active" (a
// token's expert, the shared one, attention, both tables). The model card's 109B holds its vision
// encoder too. Maverick (128 experts on every other layer, the others a dense MLP 16,384 wide):
// 400,711,848,960, "400B total, 17B active".
TEST(HfConfig, Llama4CountsAsItsModelCard) {
  const std::string path = published_config("Llama-4-Scout-17B-16E");
  const HfConfig scout = hf::read_hf_config(path);
  EXPECT_EQ(scout.architecture, "Llama4ForCausalLM");
  ASSERT_TRUE(scout.moe);
  EXPECT_EQ(scout.moe->experts, 16);
  EXPECT_EQ(scout.moe->shared_width(), 8192);
  EXPECT_EQ(scout.ffn, 16384);
  EXPECT_EQ(scout.nope_layers, 12);
  EXPECT_EQ(scout.nope_interval, 4);
  EXPECT_EQ(scout.attention_chunk, 8192);
  EXPECT_TRUE(scout.qk_l2_norm);
  EXPECT_FALSE(scout.qk_norm);
  EXPECT_EQ(hf::parameter_count(scout), 107769861120);
  zoo::TransformerResize short_sequence;
  short_sequence.seq = 64;
  const Graph g = hf::build_hf_model(scout, 1, short_sequence);
  EXPECT_EQ(g.parameter_count(), 107769861120);
  EXPECT_NEAR(static_cast<double>(g.active_parameter_count()), 17e9, 0.5e9);

  json maverick = json::parse(std::ifstream(path));
  maverick["text_config"]["num_local_experts"] = 128;
  maverick["text_config"]["interleave_moe_layer_step"] = 2;
  const HfConfig m = hf::parse_hf_config(maverick, "maverick", "maverick");
  EXPECT_TRUE(m.moe->is_moe_layer(1) && !m.moe->is_moe_layer(0));
  EXPECT_EQ(hf::parameter_count(m), 400711848960);
  const Graph mg = hf::build_hf_model(m, 1, short_sequence);
  EXPECT_EQ(mg.parameter_count(), 400711848960);
  EXPECT_NEAR(static_cast<double>(mg.active_parameter_count()), 17e9, 0.5e9);
}

// OLMo 2 normalises each block's output before adding it to the residual, and nothing before the
// blocks: its graph's norms read the attention's and the MLP's outputs, and the plan's model
// shape says so (a launch would otherwise be written for a pre-norm decoder).
TEST(HfConfig, Olmo2NormalisesAfterEachBlockOnly) {
  zoo::TransformerResize short_sequence;
  short_sequence.seq = 64;
  const HfConfig olmo = hf::read_hf_config(published_config("OLMo-2-1124-7B"));
  EXPECT_TRUE(olmo.post_norms);
  EXPECT_TRUE(olmo.qk_norm_whole);
  EXPECT_EQ(olmo.dtype, "float32");
  const Graph g = hf::build_hf_model(olmo, 1, short_sequence);
  int after_attention = 0;
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == OpType::LayerNorm &&
        g.node(n.inputs.at(0).node).op.type == OpType::MultiHeadAttention)
      ++after_attention;
  EXPECT_EQ(after_attention, 32);
  EXPECT_EQ(g.count(OpType::LayerNorm), 2 * 32 + 1);
  const auto shape = model_shape_of(g);
  ASSERT_TRUE(shape);
  EXPECT_TRUE(shape->post_norms);
  EXPECT_FALSE(shape->sandwich_norms);
  const auto llama = model_shape_of(
      hf::build_hf_model(hf::read_hf_config(published_config("Llama-3.1-8B")), 1, short_sequence));
  ASSERT_TRUE(llama);
  EXPECT_FALSE(llama->post_norms);
}

// Granite's scalars other than 1 make it no plain Llama for a launch; at GraniteConfig's defaults
// (1) it is one.
TEST(HfConfig, GranitesMultipliersAreKeptForTheLaunch) {
  const HfConfig granite = hf::read_hf_config(published_config("granite-3.0-8b-base"));
  EXPECT_TRUE(granite.multipliers);
  EXPECT_TRUE(granite.tied);
  json plain = {{"architectures", {"GraniteForCausalLM"}},
                {"hidden_size", 256},
                {"intermediate_size", 512},
                {"num_attention_heads", 4},
                {"num_hidden_layers", 2},
                {"vocab_size", 1000},
                {"residual_multiplier", 1.0}};
  EXPECT_FALSE(hf::parse_hf_config(plain, "plain.json").multipliers);
  plain["logits_scaling"] = 8.0;
  EXPECT_TRUE(hf::parse_hf_config(plain, "plain.json").multipliers);
}

TEST(HfConfig, ReadsEachFamilysOwnFields) {
  const HfConfig qwen3 = hf::read_hf_config(published_config("Qwen3-8B"));
  EXPECT_EQ(qwen3.head_dim, 128);
  EXPECT_TRUE(qwen3.qk_norm);
  EXPECT_EQ(qwen3.sliding_window, 0);  // use_sliding_window is false
  EXPECT_EQ(qwen3.max_positions, 40960);

  const HfConfig qwen2 = hf::read_hf_config(published_config("Qwen2.5-7B"));
  EXPECT_TRUE(qwen2.qkv_bias);
  EXPECT_FALSE(qwen2.out_bias);

  const HfConfig llama = hf::read_hf_config(published_config("Llama-3.1-8B"));
  EXPECT_EQ(llama.kv_heads, 8);
  EXPECT_EQ(llama.rope_scaling, "llama3");
  EXPECT_EQ(llama.rope_theta, 500000.0);
  EXPECT_EQ(llama.dtype, "bfloat16");
  EXPECT_FALSE(llama.tied);

  const HfConfig mistral = hf::read_hf_config(published_config("Mistral-7B-v0.1"));
  EXPECT_EQ(mistral.sliding_window, 4096);
  EXPECT_EQ(mistral.sliding_layers, 32);

  // GLM-4-0414's block is Gemma 2's four norms; GLM-4-9B's (GlmForCausalLM), of the same sizes,
  // has the usual two. Both rotate half of each head and bias q, k and v by default.
  const HfConfig glm4 = hf::read_hf_config(published_config("GLM-4-9B-0414"));
  EXPECT_TRUE(glm4.sandwich_norms);
  EXPECT_TRUE(glm4.qkv_bias);
  EXPECT_FALSE(glm4.out_bias);
  EXPECT_DOUBLE_EQ(glm4.rotary_fraction, 0.5);
  json glm = json::parse(std::ifstream(published_config("GLM-4-9B-0414")));
  glm["architectures"] = {"GlmForCausalLM"};
  glm["model_type"] = "glm";
  glm.erase("attention_bias");
  glm.erase("partial_rotary_factor");
  const HfConfig glm_9b = hf::parse_hf_config(glm, "glm-4-9b-hf/config.json");
  EXPECT_FALSE(glm_9b.sandwich_norms);
  EXPECT_TRUE(glm_9b.qkv_bias);
  EXPECT_DOUBLE_EQ(glm_9b.rotary_fraction, 0.5);
  EXPECT_EQ(hf::parameter_count(glm_9b), 9400279040 - 2 * 40 * 4096);

  const HfConfig gemma2 = hf::read_hf_config(published_config("gemma-2-9b"));
  EXPECT_TRUE(gemma2.tied);  // Gemma2Config's default: the config does not say
  EXPECT_TRUE(gemma2.sandwich_norms);
  EXPECT_EQ(gemma2.activation, "gelu_pytorch_tanh");
  EXPECT_EQ(gemma2.sliding_layers, 21);  // every other layer of 42

  const HfConfig gemma3 = hf::read_hf_config(published_config("gemma-3-12b"));
  EXPECT_EQ(gemma3.head_dim, 256);
  EXPECT_EQ(gemma3.sliding_window, 1024);
  EXPECT_EQ(gemma3.sliding_layers, 40);  // 5 of every 6 of 48
  EXPECT_EQ(gemma3.rope_scaling, "linear");

  const HfConfig gpt2 = hf::read_hf_config(published_config("gpt2"));
  EXPECT_EQ(gpt2.hidden, 768);
  EXPECT_EQ(gpt2.layers, 12);
  EXPECT_EQ(gpt2.ffn, 4 * 768);  // n_inner is null
  EXPECT_EQ(gpt2.max_positions, 1024);
  EXPECT_TRUE(gpt2.learned_positions && gpt2.layer_norm && gpt2.tied && !gpt2.gated_mlp);

  const HfConfig neox = hf::read_hf_config(published_config("pythia-1b"));
  EXPECT_TRUE(neox.parallel_residual && neox.layer_norm && !neox.tied);
  EXPECT_DOUBLE_EQ(neox.rotary_fraction, 0.25);
  EXPECT_EQ(neox.dtype, "float16");

  const HfConfig deepseek = hf::read_hf_config(published_config("DeepSeek-V3"));
  ASSERT_TRUE(deepseek.moe && deepseek.mla);
  EXPECT_EQ(deepseek.moe->experts, 256);
  EXPECT_EQ(deepseek.moe->experts_per_token, 8);
  EXPECT_EQ(deepseek.moe->shared_experts, 1);
  EXPECT_EQ(deepseek.moe->dense_layers_first, 3);
  EXPECT_EQ(deepseek.moe->expert_ffn, 2048);
  EXPECT_EQ(deepseek.mla->kv_lora_rank, 512);
  EXPECT_EQ(deepseek.rope_scaling, "yarn");
  EXPECT_EQ(deepseek.moe->route_groups, 8);  // topk_method noaux_tc: n_group, topk_group
  EXPECT_EQ(deepseek.moe->route_group_top_k, 4);
  // GLM-4.5-Air's n_group 1: no limit.
  EXPECT_EQ(hf::read_hf_config(published_config("GLM-4.5-Air")).moe->route_groups, 0);

  const HfConfig oss = hf::read_hf_config(published_config("gpt-oss-20b"));
  ASSERT_TRUE(oss.moe);
  EXPECT_EQ(oss.moe->experts, 32);
  EXPECT_EQ(oss.moe->experts_per_token, 4);
  EXPECT_EQ(oss.sliding_window, 128);
  EXPECT_EQ(oss.sliding_layers, 12);  // layer_types alternates

  const HfConfig qwen_moe = hf::read_hf_config(published_config("Qwen3-30B-A3B"));
  ASSERT_TRUE(qwen_moe.moe);
  EXPECT_EQ(qwen_moe.moe->experts, 128);
  EXPECT_EQ(qwen_moe.moe->expert_ffn, 768);
}

TEST(HfConfig, TheSequenceIsTheConfigsUnlessGiven) {
  const HfConfig c = hf::read_hf_config(published_config("pythia-1b"));
  const Graph whole = hf::build_hf_model(c, 2);
  EXPECT_EQ(whole.name, "pythia-1b");
  EXPECT_EQ(whole.batch_size, 2);
  const auto input_sizes = [](const Graph& g) {
    for (const auto& [id, n] : g.nodes())
      if (n.op.name == "input_ids") return n.outputs.at(0).sizes();
    return std::vector<std::int64_t>{};
  };
  EXPECT_EQ(input_sizes(whole), (std::vector<std::int64_t>{2, 2048}));
  EXPECT_EQ(compute_dtype(whole), DataType::Float16);  // torch_dtype

  zoo::TransformerResize r;
  r.seq = 512;
  r.layers = 2;
  const Graph resized = hf::build_hf_model(c, 2, r);
  EXPECT_EQ(resized.name, "pythia-1b[seq=512,layers=2]");
  EXPECT_EQ(input_sizes(resized), (std::vector<std::int64_t>{2, 512}));

  zoo::TransformerResize wider;
  wider.hidden = 4096;
  try {
    hf::build_hf_model(c, 2, wider);
    ADD_FAILURE() << "--hidden applied to a config";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("hidden_size"), std::string::npos) << e.what();
  }
  // GPT-2's positions are a table: no sequence beyond it.
  zoo::TransformerResize longer;
  longer.seq = 2048;
  EXPECT_THROW(hf::build_hf_model(hf::read_hf_config(published_config("gpt2")), 1, longer),
               InputError);
}

TEST(HfConfig, LoadsAsAModelFromTheFileOrItsFolder) {
  const std::string folder = std::string(UNITY_SOURCE_DIR) + "/models/hf/gpt2";
  zoo::TransformerResize r;
  r.seq = 128;
  const Graph from_file = load_model(folder + "/config.json", 4, r, 1);
  const Graph from_folder = load_model(folder, 4, r, 1);
  EXPECT_EQ(from_file.structural_hash(), from_folder.structural_hash());
  EXPECT_EQ(from_file.batch_size, 4);
  // One sequence per device by default, as the llama family's members.
  EXPECT_EQ(load_model_for_devices(folder, 8, 0, r).batch_size, 8);
  EXPECT_EQ(load_model(folder).batch_size, 1);
}

// A small config written for the tests: a Llama of 2 layers.
json tiny_llama() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"hidden_size", 64},
          {"intermediate_size", 176},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"num_hidden_layers", 2},
          {"vocab_size", 256},
          {"max_position_embeddings", 32},
          {"torch_dtype", "bfloat16"}};
}

std::string error_of(const json& config) {
  try {
    hf::parse_hf_config(config, "tiny/config.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// DeepSeek-V2-Lite (deepseek-ai/DeepSeek-V2-Lite's config.json): queries straight from x
// (q_lora_rank null: LatentAttention of 6 inputs), softmax routing over 64 experts, 6 per token,
// 2 shared, the first layer dense. Its model card: 15.7B total, 2.4B activated; the active count
// here, 2.66B, less the embedding table (a lookup) is 2.45B, which the card cuts to 2.4B.
// Transformers 5 saves the rotary settings as one rope_parameters object (rope_theta,
// partial_rotary_factor, rope_type and the scaling's numbers), flat or one per layer type; a
// config saved so reads as the same model as its transformers 4 form.
TEST(HfConfig, TransformersFiveRopeParametersReadAsTheLegacyFields) {
  json legacy = tiny_llama();
  legacy["rope_theta"] = 500000.0;
  legacy["rope_scaling"] = {{"rope_type", "llama3"},
                            {"factor", 8.0},
                            {"low_freq_factor", 1.0},
                            {"high_freq_factor", 4.0},
                            {"original_max_position_embeddings", 8192}};
  json v5 = tiny_llama();
  v5["rope_parameters"] = legacy["rope_scaling"];
  v5["rope_parameters"]["rope_theta"] = 500000.0;
  const HfConfig a = hf::parse_hf_config(legacy, "legacy/config.json");
  const HfConfig b = hf::parse_hf_config(v5, "v5/config.json");
  EXPECT_EQ(b.rope_theta, 500000.0);
  EXPECT_EQ(b.rope_scaling, "llama3");
  EXPECT_EQ(b.rope_scaling_params, a.rope_scaling_params);
  EXPECT_EQ(b.rope_scaling_params.at("original_max_position_embeddings"), 8192.0);
  EXPECT_FALSE(b.rope_scaling_params.count("rope_theta"));

  // The plain rotary embedding, named, is no scaling (either form); a partial rotary factor
  // inside the object is read.
  json plain = tiny_llama();
  plain["rope_parameters"] = {
      {"rope_type", "default"}, {"rope_theta", 1e6}, {"partial_rotary_factor", 0.5}};
  const HfConfig c = hf::parse_hf_config(plain, "plain/config.json");
  EXPECT_EQ(c.rope_scaling, "");
  EXPECT_TRUE(c.rope_scaling_params.empty());
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(c.rotary_fraction, 0.5);
  json named = tiny_llama();
  named["rope_scaling"] = {{"rope_type", "default"}};
  EXPECT_EQ(hf::parse_hf_config(named, "named/config.json").rope_scaling, "");

  // One object per layer type (Gemma 3's): the full attention's is the model's.
  json per_type = tiny_llama();
  per_type["rope_parameters"] = {
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
      {"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1e6}}}};
  const HfConfig d = hf::parse_hf_config(per_type, "per_type/config.json");
  EXPECT_EQ(d.rope_scaling, "linear");
  EXPECT_EQ(d.rope_theta, 1e6);
  EXPECT_EQ(d.rope_scaling_params.at("factor"), 8.0);

  json bad = tiny_llama();
  bad["rope_parameters"] = "yarn";
  EXPECT_NE(error_of(bad).find("'rope_parameters' must be an object"), std::string::npos)
      << error_of(bad);
  bad["rope_parameters"] = {{"rope_theta", "big"}};
  EXPECT_NE(error_of(bad).find("rope_theta must be a number"), std::string::npos) << error_of(bad);
}

TEST(HfConfig, DeepSeekV2LiteBuildsWithoutQueryCompression) {
  const json config = {{"architectures", {"DeepseekV2ForCausalLM"}},
                       {"hidden_size", 2048},
                       {"intermediate_size", 10944},
                       {"num_attention_heads", 16},
                       {"num_key_value_heads", 16},
                       {"num_hidden_layers", 27},
                       {"vocab_size", 102400},
                       {"max_position_embeddings", 163840},
                       {"q_lora_rank", nullptr},
                       {"kv_lora_rank", 512},
                       {"qk_nope_head_dim", 128},
                       {"qk_rope_head_dim", 64},
                       {"v_head_dim", 128},
                       {"n_routed_experts", 64},
                       {"n_shared_experts", 2},
                       {"num_experts_per_tok", 6},
                       {"moe_intermediate_size", 1408},
                       {"first_k_dense_replace", 1},
                       {"topk_method", "greedy"},
                       {"torch_dtype", "bfloat16"}};
  const HfConfig c = hf::parse_hf_config(config, "DeepSeek-V2-Lite/config.json", "V2-Lite");
  ASSERT_TRUE(c.mla && c.moe);
  EXPECT_EQ(c.mla->q_lora_rank, 0);
  EXPECT_FALSE(c.moe->sigmoid_scores);
  EXPECT_FALSE(c.moe->normalize_top_k);
  EXPECT_EQ(hf::parameter_count(c), 15706484224);
  zoo::TransformerResize short_sequence;
  short_sequence.seq = 64;
  const Graph g = hf::build_hf_model(c, 1, short_sequence);
  EXPECT_EQ(g.parameter_count(), 15706484224);
  EXPECT_EQ(g.count(OpType::LatentAttention), 27);
  for (const auto& [id, n] : g.nodes()) {
    if (n.op.type == OpType::LatentAttention) {
      EXPECT_EQ(n.inputs.size(), 6u);
    }
  }
  EXPECT_EQ(g.active_parameter_count(), 2661150208);
  EXPECT_NEAR(static_cast<double>(g.active_parameter_count() - 102400LL * 2048), 2.45e9, 0.05e9);
  EXPECT_EQ(c.moe->route_groups, 0);  // greedy: every expert open to every token
}

// DeepSeek-V2's router limits a token's 6 experts to its best 3 of 8 groups where topk_method
// says group_limited_greedy; the Experts operators hold it, and a topk_group that cannot hold the
// top-k, or an n_group that does not divide the experts, exits naming the field.
TEST(HfConfig, DeepSeekV2GroupLimitedRoutingIsHeld) {
  json config = {{"architectures", {"DeepseekV2ForCausalLM"}},
                 {"hidden_size", 256},
                 {"intermediate_size", 512},
                 {"num_attention_heads", 4},
                 {"num_key_value_heads", 4},
                 {"num_hidden_layers", 2},
                 {"vocab_size", 1024},
                 {"q_lora_rank", 64},
                 {"kv_lora_rank", 32},
                 {"qk_nope_head_dim", 32},
                 {"qk_rope_head_dim", 16},
                 {"v_head_dim", 32},
                 {"n_routed_experts", 160},
                 {"n_shared_experts", 2},
                 {"num_experts_per_tok", 6},
                 {"moe_intermediate_size", 64},
                 {"topk_method", "group_limited_greedy"},
                 {"n_group", 8},
                 {"topk_group", 3}};
  const HfConfig c = hf::parse_hf_config(config, "V2/config.json", "V2");
  ASSERT_TRUE(c.moe);
  EXPECT_EQ(c.moe->route_groups, 8);
  EXPECT_EQ(c.moe->route_group_top_k, 3);
  zoo::TransformerResize short_sequence;
  short_sequence.seq = 16;
  const Graph g = hf::build_hf_model(c, 1, short_sequence);
  int held = 0;
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == OpType::Experts) {
      EXPECT_EQ(n.op.attrs.get_int("route_groups"), 8);
      EXPECT_EQ(n.op.attrs.get_int("route_group_top_k"), 3);
      ++held;
    }
  EXPECT_EQ(held, 2);
  config["topk_group"] = 8;  // every group kept: no limit
  EXPECT_EQ(hf::parse_hf_config(config, "V2/config.json", "V2").moe->route_groups, 0);
  config["n_group"] = 7;
  EXPECT_THROW(
      {
        try {
          hf::parse_hf_config(config, "V2/config.json", "V2");
        } catch (const InputError& e) {
          EXPECT_NE(std::string(e.what()).find("'n_group' is 7, which does not divide the 160"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      InputError);
  config["n_group"] = 80;
  config["topk_group"] = 2;  // 2 groups of 2 experts: fewer than 6
  EXPECT_THROW(hf::parse_hf_config(config, "V2/config.json", "V2"), InputError);
}

TEST(HfConfig, ATinyLlamaIsTheZoosLlamaTiny) {
  const HfConfig c = hf::parse_hf_config(tiny_llama(), "tiny/config.json", "tiny");
  const Graph g = hf::build_hf_model(c, 4);
  // llama-tiny: 2 layers, hidden 64, 4 heads (2 KV), ffn 176, sequence 32, vocabulary 256.
  const Graph zoo_model = load_model("llama-tiny", 4);
  EXPECT_EQ(g.structural_hash(), zoo_model.structural_hash());
  EXPECT_EQ(g.parameter_count(), hf::parameter_count(c));
}

TEST(HfConfig, RefusesWhatMakesNoModelNamingTheField) {
  json unknown = tiny_llama();
  unknown["architectures"] = {"FalconForCausalLM"};
  std::string e = error_of(unknown);
  EXPECT_NE(e.find("FalconForCausalLM"), std::string::npos) << e;
  EXPECT_NE(e.find("GPTNeoXForCausalLM"), std::string::npos) << e;  // the supported list

  json missing = tiny_llama();
  missing.erase("hidden_size");
  e = error_of(missing);
  EXPECT_NE(e.find("'hidden_size' is missing"), std::string::npos) << e;

  json indivisible = tiny_llama();
  indivisible["num_attention_heads"] = 6;
  indivisible["num_key_value_heads"] = 6;
  e = error_of(indivisible);
  EXPECT_NE(e.find("num_attention_heads"), std::string::npos) << e;
  EXPECT_NE(e.find("head_dim"), std::string::npos) << e;
  indivisible["head_dim"] = 16;  // a head size of its own makes it a model
  EXPECT_EQ(error_of(indivisible), "no error");

  json kv = tiny_llama();
  kv["num_key_value_heads"] = 3;
  e = error_of(kv);
  EXPECT_NE(e.find("num_key_value_heads"), std::string::npos) << e;

  json negative = tiny_llama();
  negative["intermediate_size"] = -176;
  e = error_of(negative);
  EXPECT_NE(e.find("intermediate_size"), std::string::npos) << e;
  EXPECT_NE(e.find("positive"), std::string::npos) << e;

  json fractional = tiny_llama();
  fractional["num_hidden_layers"] = 2.5;
  EXPECT_NE(error_of(fractional).find("num_hidden_layers"), std::string::npos);

  json text = tiny_llama();
  text["vocab_size"] = "256";
  EXPECT_NE(error_of(text).find("vocab_size"), std::string::npos);

  json dtype = tiny_llama();
  dtype["torch_dtype"] = "int8";
  EXPECT_NE(error_of(dtype).find("torch_dtype"), std::string::npos);

  json types = tiny_llama();
  types["sliding_window"] = 16;
  types["layer_types"] = {"sliding_attention"};
  EXPECT_NE(error_of(types).find("layer_types"), std::string::npos);

  json experts = tiny_llama();
  experts["architectures"] = {"MixtralForCausalLM"};
  experts["num_local_experts"] = 2;
  experts["num_experts_per_tok"] = 4;
  EXPECT_NE(error_of(experts).find("num_experts_per_tok"), std::string::npos);

  EXPECT_NE(error_of(json::array()).find("object"), std::string::npos);
  EXPECT_NE(error_of(json{{"hidden_size", 64}}).find("architectures"), std::string::npos);
}

TEST(HfConfig, MalformedAndMissingFilesAreInputErrors) {
  const fs::path dir = fs::temp_directory_path() / ("unity_hf_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string text = tiny_llama().dump();
  {
    std::ofstream(dir / "config.json") << text.substr(0, text.size() / 2);  // truncated
  }
  EXPECT_THROW(hf::read_hf_config(dir), InputError);
  EXPECT_THROW(load_model((dir / "config.json").string()), InputError);
  fs::remove(dir / "config.json");
  EXPECT_THROW(load_model(dir.string()), InputError);  // a folder without config.json
  // A .json of another name is a config when it names an architecture.
  { std::ofstream(dir / "tiny.json") << text; }
  EXPECT_EQ(load_model((dir / "tiny.json").string()).name, "tiny");
  fs::remove_all(dir);
}

TEST(HfConfig, Gemma3sMultimodalConfigGivesItsLanguageModel) {
  // google/gemma-3-12b-pt's config.json names only what differs from Gemma3TextConfig's defaults.
  const json wrapper = {{"architectures", {"Gemma3ForConditionalGeneration"}},
                        {"model_type", "gemma3"},
                        {"torch_dtype", "bfloat16"},
                        {"text_config",
                         {{"hidden_size", 3840},
                          {"intermediate_size", 15360},
                          {"model_type", "gemma3_text"},
                          {"num_attention_heads", 16},
                          {"num_hidden_layers", 48},
                          {"num_key_value_heads", 8},
                          {"rope_scaling", {{"factor", 8.0}, {"rope_type", "linear"}}},
                          {"sliding_window", 1024}}},
                        {"vision_config", {{"hidden_size", 1152}}}};
  const HfConfig c = hf::parse_hf_config(wrapper, "gemma-3-12b-pt/config.json");
  EXPECT_EQ(c.architecture, "Gemma3ForCausalLM");
  EXPECT_EQ(hf::parameter_count(c), 11766034176);
  EXPECT_EQ(c.dtype, "bfloat16");
}

}  // namespace
}  // namespace unity::hf_config_test
