// Parallelisations beyond data parallelism, one pattern per test, each trained on threads and
// compared with the one-rank reference: spatial splits with halos, split reductions (channels,
// features, heads, embedding rows, reduced axes), column-split embeddings, broadcasts, layer norms,
// and plans run on fewer ranks than they have devices.
#include "executor_test_support.h"

using namespace unity;
using namespace unity::executor;
using namespace unity::executor::testing;

namespace {

TrainingOptions three_iterations() {
  TrainingOptions o;
  o.iterations = 3;
  o.learning_rate = 0.05;
  return o;
}

void expect_equivalent(const Graph& pcg, int devices, int ranks) {
  const Program p = lower_plan(pcg, mapped_views(pcg, devices), ranks);
  SCOPED_TRACE(describe_rank(p, 0));
  if (std::getenv("SHOW")) std::puts(describe_rank(p, 1).c_str());
  expect_matches(train_on_threads(p, three_iterations()), train_reference(pcg, three_iterations()),
                 1e-4);
}

TensorRef labels(GraphBuilder& b, std::int64_t n) { return b.input("label", {n}, DataType::Int64); }

TensorRef classify(GraphBuilder& b, TensorRef features, std::int64_t n) {
  TensorRef logits = b.linear(features, 5, "head");
  return b.softmax_cross_entropy(logits, labels(b, n), "loss");
}

}  // namespace

TEST(ParallelPatterns, ConvolutionSplitAlongHeightExchangesHalos) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.partition(b.input("image", {2, 3, 12, 10}), 2, 2);
  TensorRef w = b.replicate(b.weight("conv.weight", {4, 3, 3, 3}), 2);
  x = b.op(OpType::Conv2D,
           {{"out_channels", std::int64_t{4}},
            {"kernel", std::vector<std::int64_t>{3, 3}},
            {"stride", std::vector<std::int64_t>{1, 1}},
            {"padding", std::vector<std::int64_t>{1, 1}},
            {"activation", std::string("relu")}},
           {x, w}, "conv");
  x = b.max_pool(x, {3, 3}, {2, 2}, {1, 1}, "pool");  // 12 -> 6 rows, 3 per piece: halos again
  x = b.combine(x, 2, 2);
  classify(b, b.flatten(x, "flat"), 2);
  expect_equivalent(g, 2, 2);
}

TEST(ParallelPatterns, ConvolutionSplitAlongInputChannelsLeavesPartialSums) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.partition(b.input("image", {2, 4, 6, 6}), 1, 2);
  TensorRef w = b.partition(b.weight("conv.weight", {3, 4, 3, 3}), 1, 2);
  TensorRef bias = b.replicate(b.weight("conv.bias", {3}), 2);
  x = b.op(OpType::Conv2D,
           {{"out_channels", std::int64_t{3}},
            {"kernel", std::vector<std::int64_t>{3, 3}},
            {"padding", std::vector<std::int64_t>{1, 1}}},
           {x, w, bias}, "conv");
  x = b.relu(b.reduce(x, 2), "relu");
  classify(b, b.flatten(x, "flat"), 2);
  expect_equivalent(g, 2, 2);
}

TEST(ParallelPatterns, GroupedConvolutionSplitByGroups) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.partition(b.input("image", {2, 8, 5, 5}), 1, 2);
  TensorRef w = b.partition(b.weight("conv.weight", {8, 2, 3, 3}), 0, 2);
  x = b.op(OpType::Conv2D,
           {{"out_channels", std::int64_t{8}},
            {"kernel", std::vector<std::int64_t>{3, 3}},
            {"padding", std::vector<std::int64_t>{1, 1}},
            {"groups", std::int64_t{4}}},
           {x, w}, "conv");
  x = b.combine(x, 1, 2);
  classify(b, b.flatten(b.batch_norm(x, "bn", true), "flat"), 2);
  expect_equivalent(g, 2, 2);
}

TEST(ParallelPatterns, AttentionSplitByHeads) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.input("tokens", {2, 4, 8});
  std::vector<TensorRef> in(3, b.replicate(x, 2));
  for (const char* w : {"wq", "wk", "wv"}) in.push_back(b.partition(b.weight(w, {8, 8}), 1, 2));
  in.push_back(b.partition(b.weight("wo", {8, 8}), 0, 2));
  TensorRef y = b.op(OpType::MultiHeadAttention, {{"num_heads", std::int64_t{4}}}, in, "mha");
  y = b.reduce(y, 2);
  y = b.layer_norm(b.add(y, x, "residual"), "ln");
  classify(b, b.reduce_mean(y, {1}, false, "pool"), 2);
  expect_equivalent(g, 2, 2);
}

// Llama's attention split by heads: 4 query heads over 2 key/value heads (each device holds one
// key/value head and its two query heads), rotary embeddings, the causal mask.
TEST(ParallelPatterns, GroupedQueryRotaryAttentionSplitByHeads) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.input("tokens", {2, 4, 8});
  std::vector<TensorRef> in(3, b.replicate(x, 2));
  in.push_back(b.partition(b.weight("wq", {8, 8}), 1, 2));
  for (const char* w : {"wk", "wv"}) in.push_back(b.partition(b.weight(w, {8, 4}), 1, 2));
  in.push_back(b.partition(b.weight("wo", {8, 8}), 0, 2));
  TensorRef y = b.op(OpType::MultiHeadAttention,
                     {{"num_heads", std::int64_t{4}},
                      {"num_kv_heads", std::int64_t{2}},
                      {"rotary", std::int64_t{1}},
                      {"causal", std::int64_t{1}}},
                     in, "mha");
  y = b.reduce(y, 2);
  y = b.layer_norm(b.add(y, x, "residual"), "ln");
  classify(b, b.reduce_mean(y, {1}, false, "pool"), 2);
  expect_equivalent(g, 2, 2);
}

// A tiny Llama decoder layer split by sequence (context parallelism): RMSNorm, a causal rotary
// grouped-query attention whose queries are split (keys and values all-gathered: Combine, then a
// copy per block), the residual, RMSNorm and a GELU MLP on each block of tokens; in 2 blocks on 2
// ranks, and in 4 blocks on 2 ranks (two tasks each). A later block's queries sit at positions
// past 0: masked and rotated as if they were at 0, 1, ... (the kernel without the block's
// offset), training differs from one rank's by 1e-3.
TEST(ParallelPatterns, DecoderLayerSplitBySequence) {
  for (const int d : {2, 4}) {
    SCOPED_TRACE(std::to_string(d) + " blocks");
    constexpr std::int64_t n = 2, s = 8, e = 8;
    Graph g;
    GraphBuilder b(g);
    TensorRef x = b.partition(b.input("tokens", {n, s, e}), 1, d);
    auto rms = [&](TensorRef t, const std::string& name) {
      return b.op(OpType::LayerNorm, {{"epsilon", 1e-5}, {"rms", std::int64_t{1}}},
                  {t, b.replicate(b.weight(name + ".gamma", {e}), d)}, name);
    };
    TensorRef h = rms(x, "attention_norm");
    TensorRef kv = b.replicate(b.combine(h, 1, d), d);  // every block reads the whole sequence
    std::vector<TensorRef> in = {h, kv, kv};
    in.push_back(b.replicate(b.weight("wq", {e, 8}), d));
    for (const char* w : {"wk", "wv"}) in.push_back(b.replicate(b.weight(w, {e, 4}), d));
    in.push_back(b.replicate(b.weight("wo", {8, e}), d));
    TensorRef a = b.op(OpType::MultiHeadAttention,
                       {{"num_heads", std::int64_t{4}},
                        {"num_kv_heads", std::int64_t{2}},
                        {"rotary", std::int64_t{1}},
                        {"causal", std::int64_t{1}}},
                       in, "mha");
    x = b.add(x, a, "attention_residual");
    TensorRef m = rms(x, "ffn_norm");
    m = b.op(OpType::Linear,
             {{"out_features", std::int64_t{16}}, {"activation", std::string("gelu")}},
             {m, b.replicate(b.weight("w1", {e, 16}), d)}, "w1");
    m = b.op(OpType::Linear, {{"out_features", e}}, {m, b.replicate(b.weight("w2", {16, e}), d)},
             "w2");
    x = b.combine(b.add(x, m, "ffn_residual"), 1, d);
    classify(b, b.reduce_mean(x, {1}, false, "pool"), n);

    const Program p = lower_plan(g, mapped_views(g, d), 2);
    SCOPED_TRACE(describe_rank(p, 1));
    TrainingOptions o = three_iterations();
    expect_matches(train_on_threads(p, o), train_reference(g, o), 1e-5);
  }
}

TEST(ParallelPatterns, EmbeddingSplitByColumnsAndByRows) {
  for (bool rows : {false, true}) {
    Graph g;
    GraphBuilder b(g);
    TensorRef ids = b.input("ids", {4, 3}, DataType::Int64);
    TensorRef table = b.weight("table", {6, 8});
    TensorRef e;
    if (rows) {
      e = b.op(OpType::EmbeddingBag,
               {{"num_entries", std::int64_t{6}},
                {"embedding_dim", std::int64_t{8}},
                {"aggregate", std::string("mean")}},
               {b.replicate(ids, 2), b.partition(table, 0, 2)}, "bag");
      e = b.reduce(e, 2);
    } else {
      e = b.op(OpType::EmbeddingBag,
               {{"num_entries", std::int64_t{6}}, {"embedding_dim", std::int64_t{8}}},
               {b.replicate(ids, 2), b.partition(table, 1, 2)}, "bag");
      e = b.combine(e, 1, 2);
    }
    classify(b, e, 4);
    expect_equivalent(g, 2, 2);
  }
}

TEST(ParallelPatterns, ReduceSumOverASplitAxisAndBroadcastAdd) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.partition(b.input("x", {4, 6, 5}), 1, 3);
  x = b.mul(x, b.replicate(b.weight("scale", {5}), 3),
            "scaled");  // broadcast over samples and rows
  TensorRef s = b.reduce(b.reduce_sum(x, {1}, false, "sum"), 3);
  classify(b, b.tanh(s, "tanh"), 4);
  expect_equivalent(g, 3, 3);
}

TEST(ParallelPatterns, ConcatSplitTransposeOnSplitSamples) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.partition(b.input("x", {4, 6}), 0, 2);
  auto parts = b.split(x, 1, {2, 4}, "split");
  TensorRef y = b.concat({b.sigmoid(parts[1], "s"), parts[0]}, 1, "cat");
  y = b.transpose(b.reshape(y, {4, 3, 2}, "r"), {0, 2, 1}, "t");
  classify(b, b.combine(b.flatten(y, "flat"), 0, 2), 4);
  expect_equivalent(g, 2, 2);
}

// Paper Fig. 16b: a Concat of a dense feature and two embeddings cut at input boundaries (pieces
// 2: the 8 dense columns, then the two 4-column embeddings), so each device concatenates only the
// inputs of its piece, and the Linear after it reduction-parallel over those pieces.
TEST(ParallelPatterns, ConcatInPiecesFeedsAReductionParallelLinear) {
  Graph g;
  GraphBuilder b(g);
  TensorRef dense = b.tanh(b.linear(b.input("dense", {4, 6}), 8, "bottom"), "act");
  std::vector<TensorRef> features{dense};
  for (int i = 0; i < 2; ++i)
    features.push_back(b.embedding_bag(b.input("ids" + std::to_string(i), {4, 2}, DataType::Int64),
                                       10, 4, "emb" + std::to_string(i), "sum"));
  TensorRef cat = b.op(OpType::Concat, {{"axis", std::int64_t{1}}, {"pieces", std::int64_t{2}}},
                       features, "cat");
  TensorRef y = b.op(OpType::Linear, {{"out_features", std::int64_t{5}}},
                     {cat, b.partition(b.weight("top.weight", {16, 5}), 0, 2),
                      b.replicate(b.weight("top.bias", {5}), 2)},
                     "top");
  b.softmax_cross_entropy(b.reduce(y, 2), labels(b, 4), "loss");
  expect_equivalent(g, 2, 2);
}

TEST(ParallelPatterns, FourDevicePlansOnTwoRanksAndOneRank) {
  Graph g;
  GraphBuilder b(g);
  // Megatron-style MLP on 4 devices: output split, then reduction split and an AllReduce.
  TensorRef x = b.replicate(b.input("x", {8, 12}), 4);
  TensorRef h = b.op(OpType::Linear,
                     {{"out_features", std::int64_t{16}}, {"activation", std::string("relu")}},
                     {x, b.partition(b.weight("fc1", {12, 16}), 1, 4)}, "fc1");
  TensorRef y = b.op(OpType::Linear, {{"out_features", std::int64_t{5}}},
                     {h, b.partition(b.weight("fc2", {16, 5}), 0, 4)}, "fc2");
  y = b.all_reduce(y, 4, "sum");
  b.softmax_cross_entropy(y, b.replicate(labels(b, 8), 4), "loss");
  for (int ranks : {4, 2, 1}) expect_equivalent(g, 4, ranks);
}

// Multi-head latent attention split by heads over 2 devices (Megatron-Core's MLA: the down
// projections and norms copied, the up projections and w_o split, partial sums out) and by
// samples, with and without query compression.
TEST(ParallelPatterns, LatentAttentionSplitByHeadsAndBySamples) {
  for (std::int64_t q_lora : {4, 0})
    for (const char* split : {"heads", "samples"}) {
      SCOPED_TRACE(split);
      SCOPED_TRACE(q_lora);
      Graph g;
      GraphBuilder b(g);
      TensorRef x = b.input("x", {4, 3, 8});
      std::vector<TensorRef> w;
      std::vector<int> head_dim;  // -1: copied
      if (q_lora > 0) {
        w = {b.weight("w_dq", {8, q_lora}), b.weight("q_norm", {q_lora})};
        head_dim = {-1, -1};
      }
      w.push_back(b.weight("w_uq", {q_lora > 0 ? q_lora : 8, 4 * 4}));
      w.push_back(b.weight("w_dkv", {8, 4 + 2}));
      w.push_back(b.weight("kv_norm", {4}));
      w.push_back(b.weight("w_ukv", {4, 4 * 4}));
      w.push_back(b.weight("w_o", {4 * 2, 8}));
      head_dim.insert(head_dim.end(), {1, -1, -1, 1, 0});
      const bool heads = std::string(split) == "heads";
      std::vector<TensorRef> in{heads ? b.replicate(x, 2) : b.partition(x, 0, 2)};
      for (std::size_t i = 0; i < w.size(); ++i)
        in.push_back(heads && head_dim[i] >= 0 ? b.partition(w[i], head_dim[i], 2)
                                               : b.replicate(w[i], 2));
      TensorRef y = b.op(OpType::LatentAttention,
                         {{"num_heads", std::int64_t{4}},
                          {"qk_nope_head_dim", std::int64_t{2}},
                          {"qk_rope_head_dim", std::int64_t{2}},
                          {"v_head_dim", std::int64_t{2}},
                          {"causal", std::int64_t{1}}},
                         in, "mla");
      y = heads ? b.reduce(y, 2) : b.combine(y, 0, 2);
      y = b.layer_norm(b.add(y, x, "residual"), "ln");
      classify(b, b.reduce_mean(y, {1}, false, "pool"), 4);
      expect_equivalent(g, 2, 2);
    }
}

// A mixture-of-experts layer: the router picks 2 of 4 experts per token; the experts are split
// over 2 devices (expert parallelism: each device runs its 2 experts on every token routed to
// them, the partial outputs summed), then also the FFN width (expert tensor parallelism), and
// the tokens with the experts copied (data parallelism).
TEST(ParallelPatterns, ExpertsSplitByExpertsByFfnAndByTokens) {
  for (const char* split : {"experts", "ffn", "tokens"}) {
    SCOPED_TRACE(split);
    Graph g;
    GraphBuilder b(g);
    TensorRef x = b.input("tokens", {4, 3, 8});
    TensorRef gates = b.moe_router(x, 4, 2, "router", false, true);
    std::vector<TensorRef> w{b.weight("w1", {4, 8, 6}), b.weight("w2", {4, 6, 8}),
                             b.weight("w3", {4, 8, 6})};
    std::vector<TensorRef> in;
    const std::string how = split;
    if (how == "tokens") {
      in = {b.partition(x, 0, 2), b.partition(gates, 0, 2)};
      for (auto t : w) in.push_back(b.replicate(t, 2));
    } else {
      in = {b.replicate(x, 2), how == "experts" ? b.partition(gates, 2, 2) : b.replicate(gates, 2)};
      for (int i = 0; i < 3; ++i)
        in.push_back(b.partition(w[i], how == "experts" ? 0 : (i == 1 ? 1 : 2), 2));
    }
    TensorRef y = b.op(OpType::Experts, {{"top_k", std::int64_t{2}}}, in, "experts");
    y = how == "tokens" ? b.combine(y, 0, 2) : b.reduce(y, 2);
    y = b.layer_norm(b.add(y, x, "residual"), "ln");
    classify(b, b.reduce_mean(y, {1}, false, "pool"), 4);
    expect_equivalent(g, 2, 2);
  }
}

// A sub-pixel convolution (ESPCN) split along the image's height: the convolution exchanges halos,
// LRN reads its channels whole on each piece's rows, and PixelShuffle as ONNX's DepthToSpace (CRD)
// imports it, Reshape [N, C, b, b, H, W], Transpose, Reshape [N, C, H b, W b], keeps the rows
// split (H is the outer dim of each H x b group), up to the Combine before the head.
TEST(ParallelPatterns, PixelShuffleAndLrnSplitAlongHeight) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.partition(b.input("image", {2, 2, 8, 6}), 2, 2);
  TensorRef w = b.replicate(b.weight("conv.weight", {8, 2, 3, 3}), 2);
  x = b.op(OpType::Conv2D,
           {{"out_channels", std::int64_t{8}},
            {"kernel", std::vector<std::int64_t>{3, 3}},
            {"stride", std::vector<std::int64_t>{1, 1}},
            {"padding", std::vector<std::int64_t>{1, 1}}},
           {x, w}, "conv");
  x = b.op(OpType::LRN, {{"axis", std::int64_t{1}}, {"size", 3.0}, {"alpha", 0.5}}, {x}, "lrn");
  x = b.reshape(x, {2, 2, 2, 2, 8, 6}, "shuffle.blocks");
  x = b.transpose(x, {0, 1, 4, 2, 5, 3}, "shuffle.move");
  x = b.reshape(x, {2, 2, 16, 12}, "shuffle");
  EXPECT_EQ(g.shape(x).dims[2].degree, 2);
  x = b.combine(x, 2, 2);
  classify(b, b.flatten(x, "flat"), 2);
  expect_equivalent(g, 2, 2);
}

// Trilu keeps a triangle of each sample's matrix: the samples split, the matrix is read whole.
TEST(ParallelPatterns, TriluSplitBySamples) {
  Graph g;
  GraphBuilder b(g);
  TensorRef x = b.partition(b.linear(b.input("x", {4, 12}), 12, "fc"), 0, 2);
  x = b.op(OpType::Trilu, {{"axis", std::int64_t{1}}, {"rows", 3.0}, {"k", 1.0}}, {x}, "triu");
  x = b.combine(x, 0, 2);
  classify(b, x, 4);
  expect_equivalent(g, 2, 2);
}
