// The operators the Llama family needs (grouped-query, rotary and causal attention; RMSNorm) and
// the Llama builder: shapes, degrees, FLOPs, rule application and parameter counts.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "unity/core/cost/cost_model.h"
#include "unity/core/errors.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/rules/substitution.h"
#include "unity/core/strategies/data_parallel.h"
#include "unity/core/zoo/transformer_models.h"

namespace unity::llama_family_test {
namespace {

constexpr std::int64_t kBatch = 2, kSeq = 8, kHidden = 64, kHeads = 8, kKvHeads = 2;
constexpr std::int64_t kKvWidth = kHidden / kHeads * kKvHeads;  // 16

// A GQA self-attention whose projections are split into `degree` head groups by hand, as the
// head-parallel rule does.
void build_head_parallel(int degree, std::int64_t kv_heads) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.input("x", {kBatch, kSeq, kHidden});
  const std::int64_t kv_width = kHidden / kHeads * kv_heads;
  TensorRef wq = b.partition(b.weight("w_q", {kHidden, kHidden}), 1, degree);
  TensorRef wk = b.partition(b.weight("w_k", {kHidden, kv_width}), 1, degree);
  TensorRef wv = b.partition(b.weight("w_v", {kHidden, kv_width}), 1, degree);
  TensorRef wo = b.partition(b.weight("w_o", {kHidden, kHidden}), 0, degree);
  TensorRef rx = b.replicate(x, degree);
  TensorRef y =
      b.op(OpType::MultiHeadAttention, {{"num_heads", kHeads}, {"num_kv_heads", kv_heads}},
           {rx, rx, rx, wq, wk, wv, wo}, "mha");
  EXPECT_EQ(g.shape(y).replica, degree);
}

TEST(GroupedQueryAttention, ShrinksTheKeyAndValueProjections) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.input("x", {kBatch, kSeq, kHidden});
  TensorRef y = b.multi_head_attention(x, x, x, kHeads, "mha",
                                       {.kv_heads = kKvHeads, .rotary = true, .causal = true});
  EXPECT_EQ(g.shape(y).sizes(), (std::vector<std::int64_t>{kBatch, kSeq, kHidden}));
  const Node& n = g.node(y.node);
  EXPECT_EQ(n.op.attrs.get_int("num_kv_heads"), kKvHeads);
  EXPECT_EQ(n.op.attrs.get_int("rotary"), 1);
  EXPECT_EQ(n.op.attrs.get_int("causal"), 1);
  EXPECT_EQ(g.shape(n.inputs[3]).sizes(), (std::vector<std::int64_t>{kHidden, kHidden}));
  EXPECT_EQ(g.shape(n.inputs[4]).sizes(), (std::vector<std::int64_t>{kHidden, kKvWidth}));
  EXPECT_EQ(g.shape(n.inputs[5]).sizes(), (std::vector<std::int64_t>{kHidden, kKvWidth}));
  EXPECT_EQ(g.shape(n.inputs[6]).sizes(), (std::vector<std::int64_t>{kHidden, kHidden}));
  EXPECT_EQ(g.parameter_count(), 2 * kHidden * kHidden + 2 * kHidden * kKvWidth);
}

TEST(GroupedQueryAttention, DefaultsAddNoAttributes) {
  Graph plain, explicit_defaults;
  GraphBuilder a(plain), b(explicit_defaults);
  TensorRef x = a.input("x", {kBatch, kSeq, kHidden});
  TensorRef y = a.multi_head_attention(x, x, x, kHeads, "mha");
  TensorRef x2 = b.input("x", {kBatch, kSeq, kHidden});
  TensorRef y2 = b.multi_head_attention(x2, x2, x2, kHeads, "mha", {.kv_heads = kHeads});
  EXPECT_EQ(plain.node(y.node).op.attrs, explicit_defaults.node(y2.node).op.attrs);
  EXPECT_EQ(plain.structural_hash(), explicit_defaults.structural_hash());
}

TEST(GroupedQueryAttention, RejectsInvalidHeadCountsAndWeights) {
  auto attention = [](std::int64_t kv_heads, std::int64_t kv_width, std::int64_t rotary) {
    Graph g;
    GraphBuilder b(g);
    TensorRef x = b.input("x", {kBatch, kSeq, kHidden});
    b.op(OpType::MultiHeadAttention,
         {{"num_heads", kHeads}, {"num_kv_heads", kv_heads}, {"rotary", rotary}},
         {x, x, x, b.weight("w_q", {kHidden, kHidden}), b.weight("w_k", {kHidden, kv_width}),
          b.weight("w_v", {kHidden, kv_width}), b.weight("w_o", {kHidden, kHidden})},
         "mha");
  };
  EXPECT_NO_THROW(attention(kKvHeads, kKvWidth, 1));
  EXPECT_NO_THROW(attention(kHeads, kHidden, 0));
  EXPECT_THROW(attention(3, 24, 0), ShapeError);               // 8 heads are not a multiple of 3
  EXPECT_THROW(attention(0, kKvWidth, 0), ShapeError);         // not positive
  EXPECT_THROW(attention(kKvHeads, kHidden, 0), ShapeError);   // w_k/w_v still [E, E]
  EXPECT_THROW(attention(kKvHeads, kKvWidth, 2), ShapeError);  // a flag is 0 or 1
  try {
    attention(3, 24, 0);
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("num_kv_heads 3"), std::string::npos) << e.what();
  }
}

TEST(GroupedQueryAttention, HeadDegreeMustDivideTheKeyValueHeads) {
  EXPECT_NO_THROW(build_head_parallel(2, kKvHeads));
  EXPECT_NO_THROW(build_head_parallel(4, 4));
  // 4 divides the 8 query heads but not the 2 key/value heads.
  try {
    build_head_parallel(4, kKvHeads);
    ADD_FAILURE() << "a head degree of 4 with 2 key/value heads was accepted";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("does not divide num_kv_heads 2"), std::string::npos)
        << e.what();
  }
}

TEST(GroupedQueryAttention, HeadParallelRuleKeepsTheAttributesAndItsDegreeDividesKvHeads) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.input("x", {kBatch, kSeq, kHidden});
  TensorRef y = b.multi_head_attention(x, x, x, kHeads, "mha",
                                       {.kv_heads = kKvHeads, .rotary = true, .causal = true});
  b.relu(y, "out");
  const RuleSet& rules = default_rules();
  const Rule* rule = rules.find("self_attention_head_parallel");
  ASSERT_NE(rule, nullptr);
  const auto matches = find_matches(g, *rule);
  ASSERT_EQ(matches.size(), 1u);
  // Degree 4 divides the query heads but not the key/value heads: the rule does not apply.
  EXPECT_FALSE(apply_substitution(g, matches[0], {{"d", 4}}));
  auto split = apply_substitution(g, matches[0], {{"d", 2}});
  ASSERT_TRUE(split);
  EXPECT_NO_THROW(split->validate());
  int attentions = 0;
  for (const auto& [id, n] : split->nodes()) {
    if (n.op.type != OpType::MultiHeadAttention) continue;
    ++attentions;
    EXPECT_EQ(n.op.attrs.get_int("num_kv_heads"), kKvHeads);
    EXPECT_EQ(n.op.attrs.get_int("rotary"), 1);
    EXPECT_EQ(n.op.attrs.get_int("causal"), 1);
    EXPECT_EQ(n.outputs[0].replica, 2);
    EXPECT_EQ(split->shape(n.inputs[4]).dims[1].degree, 2);  // w_k split like w_q
  }
  EXPECT_EQ(attentions, 1);
}

TEST(GroupedQueryAttention, TaskWorkCountsTheSmallerProjectionsAndRotary) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.input("x", {kBatch, kSeq, kHidden});
  TensorRef plain = b.multi_head_attention(x, x, x, kHeads, "plain");
  TensorRef gqa = b.multi_head_attention(x, x, x, kHeads, "gqa", {.kv_heads = kKvHeads});
  TensorRef rotary =
      b.multi_head_attention(x, x, x, kHeads, "rotary", {.kv_heads = kKvHeads, .rotary = true});
  TensorRef causal =
      b.multi_head_attention(x, x, x, kHeads, "causal", {.kv_heads = kKvHeads, .causal = true});
  const double n = kBatch, s = kSeq, e = kHidden, kv = kKvWidth;
  // q and o projections [E, E], k and v [E, E / 8 * 2], scores and weighted sum over all heads.
  const double projections = 2 * n * (s * e * e + 2 * s * e * kv + s * e * e);
  const double attention = 2 * 2 * n * s * s * e;
  EXPECT_DOUBLE_EQ(task_work(g, plain.node).flops, 2 * n * (4 * s * e * e) + attention);
  EXPECT_DOUBLE_EQ(task_work(g, gqa.node).flops, projections + attention);
  // Rotary: 3 FLOPs per query and per key element.
  EXPECT_DOUBLE_EQ(task_work(g, rotary.node).flops,
                   projections + attention + 3 * n * (s * e + s * kv));
  // Causal: the full score matrix is counted, as Megatron-LM's formula does.
  EXPECT_DOUBLE_EQ(task_work(g, causal.node).flops, projections + attention);
  EXPECT_EQ(task_work(g, gqa.node).backward_ratio, 2);
}

TEST(GroupedQueryAttention, TaskWorkOfAHeadPartition) {
  Graph g;
  GraphBuilder b(g);
  const int d = 2;
  TensorRef x = b.replicate(b.input("x", {kBatch, kSeq, kHidden}), d);
  TensorRef y =
      b.op(OpType::MultiHeadAttention, {{"num_heads", kHeads}, {"num_kv_heads", kKvHeads}},
           {x, x, x, b.partition(b.weight("w_q", {kHidden, kHidden}), 1, d),
            b.partition(b.weight("w_k", {kHidden, kKvWidth}), 1, d),
            b.partition(b.weight("w_v", {kHidden, kKvWidth}), 1, d),
            b.partition(b.weight("w_o", {kHidden, kHidden}), 0, d)},
           "mha");
  const double n = kBatch, s = kSeq, e = kHidden, e_part = e / d, kv_part = double(kKvWidth) / d;
  const double projections = 2 * n * (s * e * e_part + 2 * s * e * kv_part + s * e_part * e);
  EXPECT_DOUBLE_EQ(task_work(g, y.node).flops, projections + 2 * 2 * n * s * s * e_part);
}

TEST(RmsNorm, TakesXAndGammaOnly) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.input("x", {kBatch, kSeq, kHidden});
  TensorRef y = b.rms_norm(x, "norm");
  EXPECT_EQ(g.shape(y), g.shape(x));
  const Node& n = g.node(y.node);
  EXPECT_EQ(n.op.type, OpType::LayerNorm);
  EXPECT_EQ(n.op.attrs.get_int("rms"), 1);
  ASSERT_EQ(n.inputs.size(), 2u);
  EXPECT_EQ(g.node(n.inputs[1].node).op.name, "norm.gamma");
  EXPECT_EQ(g.parameter_count(), kHidden);
  // RMSNorm: 4 FLOPs per element (square, sum, scale, gamma), LayerNorm 8.
  EXPECT_DOUBLE_EQ(task_work(g, y.node).flops, 4.0 * kBatch * kSeq * kHidden);
  TensorRef ln = b.layer_norm(x, "ln");
  EXPECT_DOUBLE_EQ(task_work(g, ln.node).flops, 8.0 * kBatch * kSeq * kHidden);
}

TEST(RmsNorm, RejectsABetaAndLayerNormStillNeedsOne) {
  auto norm = [](std::int64_t rms, int params) {
    Graph g;
    GraphBuilder b(g);
    TensorRef x = b.input("x", {kBatch, kHidden});
    std::vector<TensorRef> in{x};
    for (int i = 0; i < params; ++i) in.push_back(b.weight("p" + std::to_string(i), {kHidden}));
    b.op(OpType::LayerNorm, {{"rms", rms}}, in, "norm");
  };
  EXPECT_NO_THROW(norm(1, 1));
  EXPECT_THROW(norm(1, 2), ShapeError);  // no beta
  EXPECT_THROW(norm(1, 0), ShapeError);  // gamma is required
  EXPECT_THROW(norm(0, 1), ShapeError);  // LayerNorm: gamma and beta together, or neither
  EXPECT_NO_THROW(norm(0, 2));
  EXPECT_NO_THROW(norm(0, 0));
  EXPECT_THROW(norm(2, 1), ShapeError);
}

TEST(RmsNorm, PartitionsItsLeadingDims) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.partition(b.input("x", {kBatch, kSeq, kHidden}), 0, 2);
  TensorRef gamma = b.replicate(b.weight("gamma", {kHidden}), 2);
  TensorRef y = b.op(OpType::LayerNorm, {{"rms", std::int64_t{1}}}, {x, gamma}, "norm");
  EXPECT_EQ(g.shape(y).dims[0].degree, 2);
  TensorRef split_hidden = b.partition(b.input("x2", {kBatch, kSeq, kHidden}), 2, 2);
  EXPECT_THROW(b.op(OpType::LayerNorm, {{"rms", std::int64_t{1}}},
                    {split_hidden, b.weight("gamma2", {kHidden})}, "norm2"),
               ShapeError);
}

TEST(SoftmaxCrossEntropy, TakesPerTokenLogits) {
  Graph g;
  GraphBuilder b(g);
  TensorRef logits = b.input("logits", {kBatch, kSeq, 100});
  TensorRef labels = b.input("labels", {kBatch, kSeq}, DataType::Int64);
  TensorRef loss = b.softmax_cross_entropy(logits, labels, "loss");
  EXPECT_EQ(g.shape(loss).sizes(), (std::vector<std::int64_t>{kBatch, kSeq}));
}

zoo::TransformerSizes llama_tiny() { return {2, 64, 8, 2, 160, 16, 100}; }

TEST(Llama, BuildsTheLlama2Architecture) {
  const Graph g = zoo::build_llama(2, llama_tiny());
  EXPECT_EQ(g.name, "llama");
  EXPECT_EQ(g.batch_size, 2);
  EXPECT_NO_THROW(g.validate());
  std::set<std::string> names;
  for (const auto& [id, n] : g.nodes()) names.insert(n.op.name);
  for (const char* name :
       {"embed", "norm", "lm_head", "loss", "layers.0.attention_norm", "layers.0.attention",
        "layers.0.attention.add", "layers.0.ffn_norm", "layers.0.ffn.gate", "layers.0.ffn.up",
        "layers.0.ffn.down", "layers.1.ffn.down"})
    EXPECT_TRUE(names.count(name)) << name;
  EXPECT_FALSE(names.count("layers.2.attention"));
  EXPECT_EQ(g.count(OpType::MultiHeadAttention), 2);
  EXPECT_EQ(g.count(OpType::LayerNorm), 5);
  EXPECT_EQ(g.count(OpType::Embedding), 1);  // no position embedding
  for (const auto& [id, n] : g.nodes()) {
    if (n.op.type == OpType::MultiHeadAttention) {
      EXPECT_EQ(n.op.attrs.get_int("num_kv_heads"), 2);
      EXPECT_EQ(n.op.attrs.get_int("rotary"), 1);
      EXPECT_EQ(n.op.attrs.get_int("causal"), 1);
    }
    if (n.op.type == OpType::LayerNorm) {
      EXPECT_EQ(n.op.attrs.get_int("rms"), 1) << n.op.name;
    }
    if (n.op.type == OpType::Linear) {
      EXPECT_EQ(n.inputs.size(), 2u) << n.op.name << " has a bias";
    }
  }
  const std::vector<TensorRef> sinks = g.sinks();
  ASSERT_EQ(sinks.size(), 1u);
  EXPECT_EQ(g.node(sinks[0].node).op.name, "loss");
  EXPECT_EQ(g.shape(sinks[0]).sizes(), (std::vector<std::int64_t>{2, 16}));  // per token
  // embed + lm_head, 2 x (attention 2 x 64 x 64 + 2 x 64 x 16, SwiGLU 3 x 64 x 160, 2 norms), norm
  EXPECT_EQ(g.parameter_count(),
            2 * 100 * 64 + 2 * (2 * 64 * 64 + 2 * 64 * 16 + 3 * 64 * 160 + 2 * 64) + 64);
}

TEST(Llama, EveryFloatTensorHasTheModelsDtype) {
  const Graph g = zoo::build_llama(1, llama_tiny(), DataType::BFloat16);
  for (const auto& [id, n] : g.nodes()) {
    const DataType t = n.outputs[0].dtype;
    if (n.op.type == OpType::Input) {
      EXPECT_EQ(t, DataType::Int64) << n.op.name;
    } else {
      EXPECT_EQ(t, DataType::BFloat16) << n.op.name;
    }
  }
}

TEST(Llama, DataParallelVersionBuilds) {
  const Graph serial = zoo::build_llama(4, llama_tiny());
  const Graph parallel = make_data_parallel(serial, 2);
  EXPECT_NO_THROW(parallel.validate());
}

TEST(Llama, ParameterCountsMatchMetasModels) {
  const Graph llama_7b = zoo::build_llama(1, {32, 4096, 32, 32, 11008, 4096, 32000});
  EXPECT_EQ(llama_7b.parameter_count(), 6'738'415'616);
  const Graph llama_70b = zoo::build_llama(1, {80, 8192, 64, 8, 28672, 4096, 32000});
  EXPECT_EQ(llama_70b.parameter_count(), 68'976'648'192);
}

TEST(Llama, RejectsHeadsThatDoNotDivide) {
  EXPECT_THROW(zoo::build_llama(1, {1, 64, 8, 3, 160, 16, 100}), ShapeError);
  EXPECT_THROW(zoo::build_llama(1, {1, 60, 8, 8, 160, 16, 100}), ShapeError);
}

}  // namespace
}  // namespace unity::llama_family_test
