// An attention whose head size is not the embedding size over the heads (the "head_dim" attribute,
// `--head-dim`), as Qwen3, Gemma and gpt-oss have it: the weights' sizes, the refused shapes, the
// rules that split the heads, the FLOPs and the kept bytes, and the zoo's resize. Every figure by
// hand.
#include <gtest/gtest.h>

#include <string>

#include "unity/core/cost/cost_model.h"
#include "unity/core/errors.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/pipeline/segment_profile.h"
#include "unity/core/rules/substitution.h"
#include "unity/core/strategies/expert_strategies.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/core/zoo/transformer_models.h"

namespace unity::head_dim_test {
namespace {

// E = 64, 4 heads of 32 (not 64 / 4 = 16), 2 key/value heads: w_q [64, 128], w_k, w_v [64, 64],
// w_o [128, 64].
constexpr std::int64_t kBatch = 2, kSeq = 8, kHidden = 64, kHeads = 4, kKvHeads = 2, kHeadDim = 32;
constexpr std::int64_t kQWidth = kHeads * kHeadDim, kKvWidth = kKvHeads * kHeadDim;

using Sizes = std::vector<std::int64_t>;

TensorRef attention(GraphBuilder& b, TensorRef x, std::int64_t head_dim, const std::string& name,
                    std::int64_t kv_heads = kKvHeads) {
  return b.multi_head_attention(x, x, x, kHeads, name,
                                {.kv_heads = kv_heads, .head_dim = head_dim});
}

// Builds an attention from its attributes and weights of the given sizes.
void attention_of(const Attributes& attrs, const Sizes& wq, const Sizes& wk, const Sizes& wo,
                  std::int64_t hidden = kHidden) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.input("x", {kBatch, kSeq, hidden});
  b.op(
      OpType::MultiHeadAttention, attrs,
      {x, x, x, b.weight("w_q", wq), b.weight("w_k", wk), b.weight("w_v", wk), b.weight("w_o", wo)},
      "mha");
}

std::string shape_error(const Attributes& attrs, const Sizes& wq, const Sizes& wk, const Sizes& wo,
                        std::int64_t hidden = kHidden) {
  try {
    attention_of(attrs, wq, wk, wo, hidden);
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "";
}

TEST(HeadDim, WeightsAreHeadsTimesTheHeadSizeWideAndTheOutputKeepsE) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.input("x", {kBatch, kSeq, kHidden});
  TensorRef y = attention(b, x, kHeadDim, "mha");
  EXPECT_EQ(g.shape(y).sizes(), (Sizes{kBatch, kSeq, kHidden}));
  const Node& n = g.node(y.node);
  EXPECT_EQ(n.op.attrs.get_int("head_dim"), kHeadDim);
  EXPECT_EQ(g.shape(n.inputs[3]).sizes(), (Sizes{kHidden, kQWidth}));
  EXPECT_EQ(g.shape(n.inputs[4]).sizes(), (Sizes{kHidden, kKvWidth}));
  EXPECT_EQ(g.shape(n.inputs[5]).sizes(), (Sizes{kHidden, kKvWidth}));
  EXPECT_EQ(g.shape(n.inputs[6]).sizes(), (Sizes{kQWidth, kHidden}));
  // 64 x 128 twice (q, o) and 64 x 64 twice (k, v).
  EXPECT_EQ(g.parameter_count(), 2 * 64 * 128 + 2 * 64 * 64);
}

TEST(HeadDim, TheDefaultHeadSizeAddsNoAttribute) {
  Graph plain, explicit_default;
  GraphBuilder a(plain), b(explicit_default);
  TensorRef y = attention(a, a.input("x", {kBatch, kSeq, kHidden}), 0, "mha");
  TensorRef y2 = attention(b, b.input("x", {kBatch, kSeq, kHidden}), kHidden / kHeads, "mha");
  EXPECT_FALSE(explicit_default.node(y2.node).op.attrs.has("head_dim"));
  EXPECT_EQ(plain.node(y.node).op.attrs, explicit_default.node(y2.node).op.attrs);
  EXPECT_EQ(plain.structural_hash(), explicit_default.structural_hash());
}

TEST(HeadDim, AnEmbeddingTheHeadsDoNotDivideTakesAHeadSize) {
  // E = 60 over 8 heads: refused without a head size, accepted with one (8 heads of 16).
  const std::string plain =
      shape_error({{"num_heads", std::int64_t{8}}}, {60, 56}, {60, 56}, {56, 60}, 60);
  EXPECT_NE(plain.find("embedding size 60 is not divisible by num_heads 8"), std::string::npos)
      << plain;
  EXPECT_NE(plain.find("head_dim"), std::string::npos) << plain;
  EXPECT_NO_THROW(attention_of({{"num_heads", std::int64_t{8}}, {"head_dim", std::int64_t{16}}},
                               {60, 128}, {60, 128}, {128, 60}, 60));
  Graph g;
  GraphBuilder b(g);
  TensorRef y =
      b.multi_head_attention(b.input("x", {kBatch, kSeq, 60}), b.input("k", {kBatch, 4, 60}),
                             b.input("v", {kBatch, 4, 60}), 8, "mha", {.head_dim = 16});
  EXPECT_EQ(g.shape(y).sizes(), (Sizes{kBatch, kSeq, 60}));
  EXPECT_EQ(g.shape(g.node(y.node).inputs[6]).sizes(), (Sizes{128, 60}));
}

TEST(HeadDim, RefusesWeightsOfAnotherWidthAndHeadSizesThatMakeNoHeads) {
  const Attributes attrs{{"num_heads", kHeads}, {"num_kv_heads", kKvHeads}, {"head_dim", kHeadDim}};
  EXPECT_EQ(shape_error(attrs, {kHidden, kQWidth}, {kHidden, kKvWidth}, {kQWidth, kHidden}), "");
  // Weights sized for E / heads = 16: w_q must be 4 x 32 = 128 wide.
  const std::string narrow = shape_error(attrs, {kHidden, 64}, {kHidden, 32}, {64, kHidden});
  EXPECT_NE(narrow.find("w_q [E, num_heads x head_dim]) dim 1 must have size 128, got 64"),
            std::string::npos)
      << narrow;
  // w_k and w_v are num_kv_heads x head_dim = 64 wide.
  const std::string kv =
      shape_error(attrs, {kHidden, kQWidth}, {kHidden, kQWidth}, {kQWidth, kHidden});
  EXPECT_NE(kv.find("w_k [E, num_kv_heads x head_dim]) dim 1 must have size 64, got 128"),
            std::string::npos)
      << kv;
  // w_o reads the heads: [num_heads x head_dim, E], not [E, E].
  const std::string wo =
      shape_error(attrs, {kHidden, kQWidth}, {kHidden, kKvWidth}, {kHidden, kHidden});
  EXPECT_NE(wo.find("w_o [num_heads x head_dim, E]) dim 0 must have size 128, got 64"),
            std::string::npos)
      << wo;
  for (std::int64_t bad : {0, -32}) {
    Attributes a = attrs;
    a.set("head_dim", bad);
    const std::string what =
        shape_error(a, {kHidden, kQWidth}, {kHidden, kKvWidth}, {kQWidth, kHidden});
    EXPECT_NE(what.find("head_dim"), std::string::npos) << what;
  }
  // Rotary embeddings rotate pairs: an odd head size has none to rotate.
  Attributes rotary{
      {"num_heads", kHeads}, {"head_dim", std::int64_t{15}}, {"rotary", std::int64_t{1}}};
  const std::string odd = shape_error(rotary, {kHidden, 60}, {kHidden, 60}, {60, kHidden});
  EXPECT_NE(odd.find("head size 15 must be even"), std::string::npos) << odd;
  rotary.set("rotary", std::int64_t{0});
  EXPECT_EQ(shape_error(rotary, {kHidden, 60}, {kHidden, 60}, {60, kHidden}), "");
}

TEST(HeadDim, TheHeadParallelRuleSplitsTheWiderWeightsAndKeepsTheHeadSize) {
  Graph g;
  GraphBuilder b(g);
  TensorRef y = attention(b, b.input("x", {kBatch, kSeq, kHidden}), kHeadDim, "mha");
  b.relu(y, "out");
  const Rule* rule = default_rules().find("self_attention_head_parallel");
  ASSERT_NE(rule, nullptr);
  const auto matches = find_matches(g, *rule);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_FALSE(apply_substitution(g, matches[0], {{"d", 4}}));  // 2 key/value heads
  auto split = apply_substitution(g, matches[0], {{"d", 2}});
  ASSERT_TRUE(split);
  EXPECT_NO_THROW(split->validate());
  int attentions = 0;
  for (const auto& [id, n] : split->nodes()) {
    if (n.op.type != OpType::MultiHeadAttention) continue;
    ++attentions;
    EXPECT_EQ(n.op.attrs.get_int("head_dim"), kHeadDim);
    EXPECT_EQ(n.outputs[0].replica, 2);
    EXPECT_EQ(split->shape(n.inputs[3]).dims[1].size, kQWidth);
    EXPECT_EQ(split->shape(n.inputs[3]).dims[1].degree, 2);
    EXPECT_EQ(split->shape(n.inputs[6]).dims[0].degree, 2);
  }
  EXPECT_EQ(attentions, 1);
}

TEST(HeadDim, ARewriteDropsAHeadSizeAtItsDefault) {
  // A node written with head_dim = E / heads (as a model file may have it): fuse_attention
  // rebuilds it, and the rebuilt node leaves the default out, as the builder does.
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.input("x", {kBatch, kSeq, kHidden});
  auto w = [&](const char* name) { return b.weight(name, {kHidden, kHidden}); };
  TensorRef y = b.op(OpType::MultiHeadAttention,
                     {{"num_heads", kHeads}, {"head_dim", std::int64_t{kHidden / kHeads}}},
                     {x, x, x, w("w_q"), w("w_k"), w("w_v"), w("w_o")}, "mha");
  b.relu(y, "out");
  const Rule* rule = default_rules().find("fuse_attention");
  ASSERT_NE(rule, nullptr);
  const auto matches = find_matches(g, *rule);
  ASSERT_EQ(matches.size(), 1u);
  auto fused = apply_substitution(g, matches[0], {});
  ASSERT_TRUE(fused);
  for (const auto& [id, n] : fused->nodes()) {
    if (n.op.type == OpType::MultiHeadAttention) {
      EXPECT_EQ(n.op.attrs.get_int("fused"), 1);
      EXPECT_FALSE(n.op.attrs.has("head_dim"));
    }
  }
}

// Projections from the weights' widths, and each of the two score products 2 b heads sq sk D.
TEST(HeadDim, TaskWorkByHand) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.input("x", {kBatch, kSeq, kHidden});
  TensorRef y = attention(b, x, kHeadDim, "mha");
  const double n = kBatch, s = kSeq, e = kHidden, qw = kQWidth, kvw = kKvWidth;
  // 2 x 2 x (8 x 64 x 128 + 2 x 8 x 64 x 64 + 8 x 128 x 64) = 786,432
  const double projections = 2 * n * (s * e * qw + 2 * s * e * kvw + s * qw * e);
  // 2 x (2 x 2 x 4 heads x 8 x 8 x 32) = 65,536
  const double scores = 2 * (2 * n * kHeads * s * s * kHeadDim);
  EXPECT_DOUBLE_EQ(projections, 786432);
  EXPECT_DOUBLE_EQ(scores, 65536);
  const TaskWork w = task_work(g, y.node);
  EXPECT_DOUBLE_EQ(w.flops, projections + scores);
  EXPECT_DOUBLE_EQ(w.backward_ratio, 2);
  // [2, 4 heads, 8, 8] scores of 4 bytes through memory four times.
  EXPECT_DOUBLE_EQ(w.serial_bytes, 4 * n * kHeads * s * s * 4);
  // The GEMMs: q, k and v, o, then per head the scores [8, 8] and the context [8, 32].
  ASSERT_EQ(w.gemm_count, 5);
  EXPECT_DOUBLE_EQ(w.gemms[0].n, qw);
  EXPECT_DOUBLE_EQ(w.gemms[1].n, kvw);
  EXPECT_DOUBLE_EQ(w.gemms[3].count, n * kHeads);
  EXPECT_DOUBLE_EQ(w.gemms[4].n, kHeadDim);
  EXPECT_DOUBLE_EQ(w.gemms[4].count, n * kHeads);
  // Megatron-LM's count is the same FLOPs.
  EXPECT_DOUBLE_EQ(dense_forward_flops(g), projections + scores);
}

TEST(HeadDim, TaskWorkOfAHeadPartitionByHand) {
  Graph g;
  GraphBuilder b(g);
  const int d = 2;
  TensorRef x = b.replicate(b.input("x", {kBatch, kSeq, kHidden}), d);
  TensorRef y = b.op(OpType::MultiHeadAttention,
                     {{"num_heads", kHeads}, {"num_kv_heads", kKvHeads}, {"head_dim", kHeadDim}},
                     {x, x, x, b.partition(b.weight("w_q", {kHidden, kQWidth}), 1, d),
                      b.partition(b.weight("w_k", {kHidden, kKvWidth}), 1, d),
                      b.partition(b.weight("w_v", {kHidden, kKvWidth}), 1, d),
                      b.partition(b.weight("w_o", {kQWidth, kHidden}), 0, d)},
                     "mha");
  EXPECT_EQ(g.shape(y).replica, d);
  // Each task: 2 of the 4 heads, q and the context 64 wide, k and v 32.
  const double n = kBatch, s = kSeq, e = kHidden, qw = 64, kvw = 32;
  const double projections = 2 * n * (s * e * qw + 2 * s * e * kvw + s * qw * e);
  const double scores = 2 * (2 * n * 2 * s * s * kHeadDim);
  const TaskWork w = task_work(g, y.node);
  EXPECT_DOUBLE_EQ(w.flops, projections + scores);
  EXPECT_DOUBLE_EQ(w.gemms[4].n, kHeadDim);
  EXPECT_DOUBLE_EQ(w.gemms[4].count, n * 2);
}

Graph attention_graph(std::int64_t head_dim) {
  Graph g;
  GraphBuilder b(g);
  attention(b, b.input("x", {kBatch, kSeq, kHidden}), head_dim, "mha");
  return g;
}

TEST(HeadDim, KeptBytesAndTheScoresShareByHand) {
  CostModel model(load_machine("dgx-h100", {0, 1}));
  model.set_counts_weight_updates(false);
  const SegmentProfile wide = profile_segment(attention_graph(kHeadDim), model);
  const SegmentProfile plain = profile_segment(attention_graph(0), model);
  ASSERT_TRUE(wide.feasible && plain.feasible);
  const double n = kBatch, s = kSeq;
  // The input x [2, 8, 64], q and the context [2, 8, 128], k and v [2, 8, 64], the probabilities
  // [2, 4, 8, 8], all fp32: 4,096 + 16,384 + 8,192 + 2,048 bytes.
  EXPECT_DOUBLE_EQ(
      wide.activations,
      (n * s * kHidden + 2 * n * s * kQWidth + 2 * n * s * kKvWidth + n * kHeads * s * s) * 4);
  EXPECT_DOUBLE_EQ(wide.activations, 30720);
  EXPECT_DOUBLE_EQ(wide.attention_internals, n * kHeads * s * s * 4);
  // Heads of 16: q and the context 64 wide, k and v 32.
  EXPECT_DOUBLE_EQ(wide.activations - plain.activations, (2 * n * s * 64 + 2 * n * s * 32) * 4);
  // Selective recomputation's share: 4 sq sk 128 of 4 sq sk 128 + 4 E (sq 128 + sk 64).
  const double core = 4.0 * s * s * kQWidth;
  const double share = core / (core + 4.0 * kHidden * (s * kQWidth + s * kKvWidth));
  EXPECT_NEAR(wide.attention_core / wide.forward, share, 1e-9);
}

// The example of issue 29: a two-layer llama, hidden 64, 4 heads of 32, 2 key/value heads.
TEST(HeadDim, LlamaParametersByHand) {
  const Graph g = zoo::build_llama(1, {2, 64, 4, 2, 176, 32, 256, 32});
  EXPECT_NO_THROW(g.validate());
  // embed and lm_head 256 x 64 each, the final norm 64; a layer: w_q 64 x 128, w_k and w_v
  // 64 x 64, w_o 128 x 64, gate, up and down 64 x 176, two RMSNorms 64.
  const std::int64_t layer = 64 * 128 + 64 * 64 + 64 * 64 + 128 * 64 + 3 * 64 * 176 + 2 * 64;
  EXPECT_EQ(g.parameter_count(), 256 * 64 + 256 * 64 + 64 + 2 * layer);
  // The same through the zoo's llama-tiny (those sizes) resized by --head-dim.
  zoo::TransformerResize r;
  r.head_dim = 32;
  EXPECT_FALSE(r.empty());
  const Graph tiny = zoo::build("llama-tiny", 1, r);
  EXPECT_EQ(tiny.parameter_count(), g.parameter_count());
  EXPECT_NE(tiny.name.find("head_dim=32"), std::string::npos) << tiny.name;
  for (const auto& [id, n] : tiny.nodes()) {
    if (n.op.type == OpType::MultiHeadAttention) {
      EXPECT_EQ(n.op.attrs.get_int("head_dim"), 32);
    }
  }
}

TEST(HeadDim, GptParametersAndMegatronCountByHand) {
  zoo::TransformerResize r;
  r.head_dim = 32;
  const Graph wide = zoo::build("gpt-tiny", 0, r);
  const Graph plain = zoo::build("gpt-tiny", 0);
  // gpt-tiny: 2 layers, hidden 64, 4 heads (of 16, here 32), ffn 256, sequence 32, vocabulary
  // 256, batch 4. A layer: attention 4 x 64 x 128, fc1 and fc2 64 x 256 with biases 256 and 64,
  // two LayerNorms 4 x 64; token and position embeddings, the final LayerNorm and the head.
  const std::int64_t layer = 4 * 64 * 128 + 2 * 64 * 256 + 256 + 64 + 4 * 64;
  EXPECT_EQ(wide.parameter_count(), 2 * layer + (256 + 32) * 64 + 2 * 64 + 64 * 256);
  EXPECT_EQ(wide.parameter_count() - plain.parameter_count(), 2 * 4 * 64 * (128 - 64));
  // Megatron-LM's count: each layer's projections 8 b s E (128 - 64) and scores 4 b s^2 (128 - 64)
  // more.
  const double b = 4, s = 32, e = 64;
  EXPECT_DOUBLE_EQ(dense_forward_flops(wide) - dense_forward_flops(plain),
                   2 * (8 * b * s * e * 64 + 4 * b * s * s * 64));
  // Megatron-LM's tensor parallelism splits the wider heads.
  const ExpertStrategy tp = megatron_tensor_parallel(wide, 2);
  EXPECT_NO_THROW(tp.graph.validate());
  EXPECT_NE(tp.name, "serial");
}

TEST(HeadDim, ZooResizeChecksTheHeadSize) {
  auto message = [](const char* model, const zoo::TransformerResize& r) -> std::string {
    try {
      zoo::build(model, 1, r);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  zoo::TransformerResize r;
  r.head_dim = -4;
  EXPECT_EQ(message("llama-tiny", r), "--head-dim -4: must be positive");
  r.head_dim = 33;  // llama rotates pairs of a head's elements
  EXPECT_NE(message("llama-tiny", r).find("--head-dim 33: must be even"), std::string::npos);
  EXPECT_EQ(message("gpt-tiny", r), "");  // gpt has no rotary embeddings
  // Hidden 60 over 8 heads needs a head size.
  zoo::TransformerResize odd;
  odd.hidden = 60;
  odd.heads = 8;
  odd.kv_heads = 2;
  EXPECT_NE(message("llama-tiny", odd).find("--head-dim sets the head size"), std::string::npos);
  odd.head_dim = 16;
  EXPECT_EQ(message("llama-tiny", odd), "");
  EXPECT_NE(message("resnext50", odd), "");  // not of a family
  // Qwen3-0.6B's attention (hidden 1024, 16 heads of 128, 8 key/value heads): q 2048 wide.
  zoo::TransformerResize qwen{.layers = 1,
                              .hidden = 1024,
                              .heads = 16,
                              .seq = 16,
                              .vocab = 100,
                              .ffn = 3072,
                              .kv_heads = 8,
                              .head_dim = 128};
  const Graph g = zoo::build("llama-tiny", 1, qwen);
  EXPECT_EQ(g.parameter_count(),
            1024 * 2048 * 2 + 1024 * 1024 * 2 + 3 * 1024 * 3072 + 2 * 1024 + 2 * 100 * 1024 + 1024);
}

}  // namespace
}  // namespace unity::head_dim_test
