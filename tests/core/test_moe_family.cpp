// The mixture-of-experts members of the zoo: their published parameter counts (total and
// active), the layers that have experts, and the Experts operator's work computed by hand.
#include <gtest/gtest.h>

#include "unity/core/cost/cost_model.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/core/zoo/transformer_models.h"

namespace unity {
namespace {

struct PublishedMoe {
  const char* name;
  double total, active;  // as published
  double rounding;       // the published figures' last digit
  const char* source;
};

// Totals and actives as the model makers publish them. Each is rounded to its last digit, and a
// model card's active count may leave out the embedding table (a lookup, no arithmetic): gpt-oss
// does, by 201,088 x 2,880 = 0.58B, which is taken off here.
const PublishedMoe kPublished[] = {
    {"mixtral-8x7b", 46.7e9, 12.9e9, 0.05e9, "Mixtral 8x7B model page: 46.7B total, 12.9B active"},
    {"mixtral-8x22b", 141e9, 39e9, 0.5e9, "Mixtral 8x22B announcement: 141B total, 39B active"},
    // Qwen's cards cut to the digit they show (3.35B activated is written 3.3B).
    {"qwen3-30b-a3b", 30.5e9, 3.3e9, 0.1e9, "Qwen3-30B-A3B model card: 30.5B, 3.3B activated"},
    {"qwen3-235b-a22b", 235e9, 22e9, 0.5e9, "Qwen3-235B-A22B model card: 235B, 22B activated"},
    {"gpt-oss-120b", 116.83e9, 5.13e9, 0.05e9, "gpt-oss model card, Table 1: 116.83B, 5.13B"},
};

TEST(MoeFamily, PublishedTotalAndActiveParameters) {
  for (const auto& p : kPublished) {
    SCOPED_TRACE(p.name);
    zoo::TransformerResize r;
    r.seq = 64;  // the counts do not depend on it
    const Graph g = zoo::build(p.name, 1, r);
    EXPECT_NEAR(static_cast<double>(g.parameter_count()), p.total, p.rounding) << p.source;
    double active = static_cast<double>(g.active_parameter_count());
    if (std::string(p.name) == "gpt-oss-120b") active -= 201088.0 * 2880;
    EXPECT_NEAR(active, p.active, p.rounding) << p.source;
  }
}

// gpt-oss-120b's attention alternates a 128-token window and the whole sequence, windowed first.
TEST(MoeFamily, GptOssAlternatesWindowedAndFullAttention) {
  const Graph g = zoo::build("gpt-oss-120b", 1);
  std::vector<std::int64_t> windows;
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == OpType::MultiHeadAttention) windows.push_back(n.op.attrs.get_int("window", 0));
  ASSERT_EQ(windows.size(), 36u);
  for (std::size_t i = 0; i < windows.size(); ++i) EXPECT_EQ(windows[i], i % 2 == 0 ? 128 : 0) << i;
}

// Which layers have experts: DeepSeek counts from 0 after its dense layers, Qwen from 1 and
// lists the layers it keeps dense.
TEST(MoeFamily, WhichLayersHaveExperts) {
  zoo::TransformerSizes deepseek_like{6, 64, 4, 4, 128, 16, 100};
  deepseek_like.experts = 4;
  deepseek_like.experts_per_token = 2;
  deepseek_like.expert_ffn = 32;
  deepseek_like.dense_layers_first = 1;
  deepseek_like.moe_layer_step = 2;
  std::vector<bool> moe;
  for (std::int64_t i = 0; i < 6; ++i) moe.push_back(deepseek_like.is_moe_layer(i));
  EXPECT_EQ(moe, (std::vector<bool>{false, false, true, false, true, false}));
  zoo::TransformerSizes qwen_like = deepseek_like;
  qwen_like.dense_layers_first = 0;
  qwen_like.step_from_one = true;
  qwen_like.dense_layers = {3};
  moe.clear();
  for (std::int64_t i = 0; i < 6; ++i) moe.push_back(qwen_like.is_moe_layer(i));
  EXPECT_EQ(moe, (std::vector<bool>{false, true, false, false, false, true}));
  // Built: the graph has an Experts operator where a layer has experts, and a shared expert.
  deepseek_like.shared_experts = 1;
  const Graph g = zoo::build_llama(2, deepseek_like);
  int experts = 0;
  for (const auto& [id, n] : g.nodes()) experts += n.op.type == OpType::Experts;
  EXPECT_EQ(experts, 2);
  // Per layer with experts: router 64 x 4, four SwiGLU experts and one shared, each 3 x 64 x 32.
  const zoo::TransformerSizes dense = [&] {
    zoo::TransformerSizes z = deepseek_like;
    z.experts = 0;
    return z;
  }();
  const std::int64_t dense_mlp = 3 * 64 * 128, moe_mlp = 64 * 4 + 5 * 3 * 64 * 32;
  EXPECT_EQ(g.parameter_count() - zoo::build_llama(2, dense).parameter_count(),
            2 * (moe_mlp - dense_mlp));
}

// The Experts operator's work: moe-tiny's layer has 4 x 32 = 128 tokens of 64, 4 experts of
// width 32, top 2. Each token runs through 2 SwiGLU experts: 2 x 64 x 32 x 3 multiply-adds, so
// 2 x 128 x 2 x 64 x 32 x 3 = 3,145,728 FLOPs forward; split over 2 devices by experts each holds
// 2 experts and runs half of them.
TEST(MoeFamily, ExpertsWorkByHand) {
  const Graph g = zoo::build("moe-tiny", 4);
  NodeId experts = -1;
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == OpType::Experts) experts = id;
  ASSERT_GE(experts, 0);
  const TaskWork w = task_work(g, experts);
  EXPECT_DOUBLE_EQ(w.flops, 3145728.0);
  EXPECT_DOUBLE_EQ(w.backward_ratio, 2.0);
  // The permutation into expert order and back: 4 x 256 routed copies x 64 x 2 bytes (bf16).
  EXPECT_DOUBLE_EQ(w.serial_bytes, 4.0 * 256 * 64 * 2);
  // Two grouped GEMMs as Transformer Engine runs them, a product an expert on four streams: up
  // and gate [64 tokens per expert, 2 x 32] (8 products on a CPU, which runs them apart), down
  // [64, 64]; the 4 experts' products all at once, 9 launches (8 products and the activation).
  ASSERT_EQ(w.gemm_count, 2);
  EXPECT_DOUBLE_EQ(w.gemms[0].m, 64.0);
  EXPECT_DOUBLE_EQ(w.gemms[0].n, 64.0);
  EXPECT_DOUBLE_EQ(w.gemms[0].count, 4.0);
  EXPECT_DOUBLE_EQ(w.gemms[0].products, 8.0);
  EXPECT_DOUBLE_EQ(w.gemms[1].n, 64.0);
  EXPECT_DOUBLE_EQ(w.gemms[1].count, 4.0);
  EXPECT_DOUBLE_EQ(w.launches, 9.0);
}

}  // namespace
}  // namespace unity
