#include "families.h"

#include <random>

#include <fmt/format.h>

namespace unity::rules::gen {
namespace {

using O = OpType;
using Ints = std::vector<std::int64_t>;

struct Builder {
  std::mt19937_64 rng;
  std::vector<FamilyInput> inputs;

  DenseTensor random(const Ints& sizes, std::int64_t max_index) {
    DenseTensor t(sizes);
    for (auto& v : t.data)
      v = max_index > 0 ? static_cast<double>(
                              std::uniform_int_distribution<std::int64_t>(0, max_index - 1)(rng))
                        : std::uniform_real_distribution<double>(-1.0, 1.0)(rng);
    return t;
  }

  // A serial input, and when asked its variants: split in two along each dim of `split_dims`, two
  // copies ("r"), two partial sums ("s").
  void add(const std::string& name, const Ints& sizes, bool variants = false,
           const std::vector<int>& split_dims = {}, std::int64_t max_index = 0) {
    const DataType dtype = max_index > 0 ? DataType::Int64 : DataType::Float32;
    inputs.push_back({name, name, ParallelValue::serial(random(sizes, max_index), dtype)});
    if (!variants) return;
    for (int d : split_dims) {
      ParallelValue v = ParallelValue::serial(random(sizes, max_index), dtype);
      v.shape.dims[static_cast<std::size_t>(d)].degree = 2;
      inputs.push_back({fmt::format("{}.p{}", name, d), name, v});
    }
    ParallelValue r = ParallelValue::serial(random(sizes, max_index), dtype);
    r.shape.replica = 2;
    r.layout = ReplicaLayout::copies(2);
    r.data.push_back(r.data[0]);
    inputs.push_back({name + ".r", name, r});
    if (max_index > 0) return;
    ParallelValue s = ParallelValue::serial(random(sizes, 0), dtype);
    s.shape.replica = 2;
    s.layout = ReplicaLayout::partials(2);
    s.data.push_back(random(sizes, 0));
    inputs.push_back({name + ".s", name, s});
  }

  Family take(std::string name, std::vector<Operator> compute, int max_compute, int max_parallel) {
    Family f;
    f.name = std::move(name);
    f.inputs = std::move(inputs);
    f.compute = std::move(compute);
    f.max_compute = max_compute;
    f.max_parallel = max_parallel;
    inputs.clear();
    return f;
  }
};

Operator op(O t, Attributes a = {}) { return Operator{t, std::move(a), ""}; }

// The names of an input and its variants, for a slot constraint.
std::vector<std::string> variants(const std::vector<FamilyInput>& inputs, const std::string& base) {
  std::vector<std::string> out;
  for (const auto& in : inputs)
    if (in.base == base) out.push_back(in.name);
  return out;
}

// Argument slots read the named inputs (and their variants) in order: no weight read as an
// activation, no activation as a weight.
void slots(Family& f, const std::vector<std::string>& bases) {
  f.slot_inputs.clear();
  for (const auto& b : bases) f.slot_inputs.push_back(variants(f.inputs, b));
}

std::vector<Operator> unary_ops() {
  return {op(O::Relu),
          op(O::Gelu),
          op(O::Sigmoid),
          op(O::Tanh),
          op(O::Exp),
          op(O::Sqrt),
          op(O::Erf),
          op(O::Identity),
          op(O::ScalarAdd, {{"scalar", 1.5}}),
          op(O::ScalarMul, {{"scalar", 2.5}}),
          op(O::Pow, {{"scalar", 2.0}}),
          op(O::Dropout, {{"rate", 0.5}})};
}

}  // namespace

// Compute templates state the attributes that have a default ("activation": "none", "groups": 1):
// a source pattern that leaves one out would match an operator with any value of it, where most
// rewrites do not hold. A rule that holds for every value still gets it as a symbol
// (Level::General).
std::vector<Family> families(int max_ops, std::uint64_t seed) {
  Builder b{std::mt19937_64(seed), {}};
  std::vector<Family> out;
  const std::vector<int> both = {0, 1};
  auto limit = [&](Family f) {
    f.max_parallel = std::min(f.max_parallel, std::max(0, max_ops - 1));
    f.max_compute = std::min(f.max_compute, max_ops);
    out.push_back(std::move(f));
  };
  // Families whose operators read weights: each slot reads its own input, and they may use one
  // operator more (data parallelism of a Linear with bias splits the input, replicates weight and
  // bias, and combines).
  auto weighted = [&](Family f, std::vector<std::string> bases, int extra) {
    slots(f, bases);
    f.extra_ops = extra;
    const int wanted = f.max_parallel;
    limit(std::move(f));
    // The extra operator is a parallel one (the bias's Replicate or Partition).
    out.back().max_parallel = std::min(wanted, std::max(0, max_ops - 1 + extra));
  };

  // Parallel operators alone: cancellations, fusions into AllReduce, commutations.
  b.add("x", {4, 6}, true, both);
  limit(b.take("parallel", {}, 0, std::min(max_ops, 3)));
  b.add("x", {4, 6}, true, both);
  {
    Family f = b.take("pipeline", {}, 0, std::min(max_ops, 2));
    f.temporal = true;
    limit(std::move(f));
  }

  // Each element-wise unary operator with the parallel operators.
  for (const auto& u : unary_ops()) {
    b.add("x", {4, 6}, true, both);
    limit(b.take(fmt::format("unary.{}", to_string(u.type)), {u}, 1, 3));
  }
  b.add("x", {4, 6}, true, both);
  limit(b.take("softmax", {op(O::Softmax, {{"axis", std::int64_t{-1}}})}, 1, 3));

  // Binary operators, with a same-shape operand or a broadcast bias.
  for (O t : {O::Add, O::Sub, O::Mul, O::Div}) {
    b.add("x", {4, 6}, true, both);
    b.add("y", {4, 6}, true, both);
    weighted(b.take(fmt::format("binary.{}", to_string(t)), {op(t)}, 1, 3), {"x", "y"}, 0);
    b.add("x", {4, 6}, true, {0, 1});
    b.add("b", {6});
    weighted(b.take(fmt::format("bias.{}", to_string(t)), {op(t)}, 1, 3), {"x", "b"}, 0);
  }

  // Dense operators. Families whose operators read weights and a bias may use one operator more:
  // data parallelism of a Linear with bias splits the input, replicates weight and bias, and
  // combines.
  for (const char* act : {"none", "relu"}) {
    b.add("x", {4, 6}, true, both);
    b.add("w", {6, 8});
    b.add("b", {8});
    weighted(b.take(fmt::format("linear.{}", act),
                    {op(O::Linear,
                        {{"out_features", std::int64_t{8}}, {"activation", std::string(act)}})},
                    1, 4),
             {"x", "w", "b"}, 1);
  }
  b.add("a", {4, 6}, true, both);
  b.add("b", {6, 8}, true, both);
  weighted(b.take("matmul", {op(O::MatMul)}, 1, 3), {"a", "b"}, 0);
  b.add("a", {2, 4, 6}, true, {0, 1, 2});
  b.add("b", {2, 6, 8}, true, {0, 1, 2});
  weighted(b.take("batchmatmul", {op(O::BatchMatMul)}, 1, 3), {"a", "b"}, 0);

  // Convolutions, pooling, normalisation.
  b.add("x", {2, 4, 6, 6}, true, {0, 1, 2});
  b.add("w", {4, 4, 3, 3});
  b.add("b", {4});
  weighted(b.take("conv2d",
                  {op(O::Conv2D, {{"out_channels", std::int64_t{4}},
                                  {"kernel", Ints{3, 3}},
                                  {"padding", Ints{1, 1}},
                                  {"groups", std::int64_t{1}},
                                  {"activation", std::string("none")}})},
                  1, 4),
           {"x", "w", "b"}, 1);
  b.add("x", {2, 4, 6, 6}, true, {0, 1});
  b.add("w", {4, 2, 3, 3});
  b.add("b", {4});
  weighted(b.take("conv2d.grouped",
                  {op(O::Conv2D, {{"out_channels", std::int64_t{4}},
                                  {"kernel", Ints{3, 3}},
                                  {"padding", Ints{1, 1}},
                                  {"groups", std::int64_t{2}},
                                  {"activation", std::string("none")}})},
                  1, 4),
           {"x", "w", "b"}, 1);
  for (const char* pool : {"max", "avg"}) {
    b.add("x", {2, 4, 6, 6}, true, {0, 1, 2});
    limit(b.take(fmt::format("pool2d.{}", pool),
                 {op(O::Pool2D, {{"pool", std::string(pool)}, {"kernel", Ints{2, 2}}})}, 1, 3));
  }
  b.add("x", {2, 4, 6, 6}, true, {0, 1});
  b.add("s", {4});
  b.add("b", {4});
  weighted(b.take("batchnorm", {op(O::BatchNorm, {{"activation", std::string("none")}})}, 1, 4),
           {"x", "s", "b"}, 1);
  b.add("x", {4, 6, 8}, true, {0, 1, 2});
  b.add("g", {8});
  b.add("b", {8});
  weighted(b.take("layernorm", {op(O::LayerNorm)}, 1, 4), {"x", "g", "b"}, 1);

  // Self-attention: one tensor as query, key and value; heads split through the weights.
  b.add("x", {2, 4, 4}, true, {0});
  for (const char* w : {"wq", "wk", "wv", "wo"}) b.add(w, {4, 4});
  {
    Family f =
        b.take("attention", {op(O::MultiHeadAttention, {{"num_heads", std::int64_t{2}}})}, 1, 6);
    f.slot_inputs = {{"x", "x.p0", "x.r"}, {}, {}, {"wq"}, {"wk"}, {"wv"}, {"wo"}};
    f.tied = {-1, 0, 0, -1, -1, -1, -1};
    f.dims = {0, 1};
    // Head parallelism replicates x, splits the four weights and reduces: seven operators.
    f.extra_ops = std::max(2, 7 - max_ops);
    f.max_chain = 1;
    f.max_parallel = std::max(0, max_ops + 2);
    if (max_ops >= 4) out.push_back(std::move(f));
  }

  // Embeddings: a row-sharded table leaves partial sums.
  b.add("i", {4, 2}, true, {0}, 6);
  b.add("w", {6, 4});
  weighted(b.take("embedding",
                  {op(O::Embedding,
                      {{"num_entries", std::int64_t{6}}, {"embedding_dim", std::int64_t{4}}}),
                   op(O::EmbeddingBag, {{"num_entries", std::int64_t{6}},
                                        {"embedding_dim", std::int64_t{4}},
                                        {"aggregate", std::string("sum")}}),
                   op(O::EmbeddingBag, {{"num_entries", std::int64_t{6}},
                                        {"embedding_dim", std::int64_t{4}},
                                        {"aggregate", std::string("mean")}})},
                  1, 3),
           {"i", "w"}, 0);

  // Data movement and reductions.
  b.add("x", {4, 6}, true, both);
  b.add("y", {4, 6}, true, both);
  weighted(b.take("concat",
                  {op(O::Concat, {{"axis", std::int64_t{0}}}),
                   op(O::Concat, {{"axis", std::int64_t{1}}})},
                  1, 3),
           {"x", "y"}, 0);
  b.add("x", {4, 6}, true, both);
  limit(b.take("split",
               {op(O::Split, {{"axis", std::int64_t{0}}, {"sizes", Ints{2, 2}}}),
                op(O::Split, {{"axis", std::int64_t{1}}, {"sizes", Ints{2, 4}}})},
               1, 3));
  b.add("x", {4, 6}, true, both);
  limit(b.take("transpose", {op(O::Transpose, {{"perm", Ints{1, 0}}})}, 1, 3));
  b.add("x", {4, 6, 8}, true, {0, 1, 2});
  limit(b.take(
      "layout3",
      {op(O::Transpose, {{"perm", Ints{0, 2, 1}}}), op(O::Flatten, {{"axis", std::int64_t{1}}}),
       op(O::Reshape, {{"shape", Ints{4, 48}}})},
      1, 3));
  for (O t : {O::ReduceSum, O::ReduceMean}) {
    b.add("x", {4, 6, 8}, true, {0, 1, 2});
    limit(b.take(fmt::format("reduce.{}", to_string(t)),
                 {op(t, {{"axes", Ints{1}}, {"keepdims", std::int64_t{0}}}),
                  op(t, {{"axes", Ints{2}}, {"keepdims", std::int64_t{1}}})},
                 1, 3));
  }

  // Losses.
  b.add("x", {4, 6}, true, both);
  b.add("y", {4}, true, {0}, 6);
  weighted(b.take("cross_entropy", {op(O::SoftmaxCrossEntropy)}, 1, 3), {"x", "y"}, 0);
  b.add("x", {4, 6}, true, both);
  b.add("y", {4, 6}, true, both);
  weighted(b.take("mse", {op(O::MSELoss)}, 1, 3), {"x", "y"}, 0);

  // Algebra without parallel operators (TASO's rules for our operators).
  b.add("x", {4, 6});
  b.add("y", {4, 6});
  b.add("z", {4, 6});
  limit(b.take("algebra.elementwise",
               {op(O::Add), op(O::Mul), op(O::ScalarMul, {{"scalar", 2.5}}), op(O::Relu)}, 3, 0));
  b.add("a", {4, 6});
  b.add("b", {6, 4});
  b.add("c", {4, 6});
  limit(b.take("algebra.matmul",
               {op(O::MatMul), op(O::Add), op(O::Transpose, {{"perm", Ints{1, 0}}}),
                op(O::ScalarMul, {{"scalar", 2.5}})},
               3, 0));
  b.add("x", {4, 6});
  b.add("y", {4, 6});
  limit(b.take(
      "algebra.layout",
      {op(O::Transpose, {{"perm", Ints{1, 0}}}), op(O::Concat, {{"axis", std::int64_t{0}}}),
       op(O::Relu), op(O::Add), op(O::Split, {{"axis", std::int64_t{0}}, {"sizes", Ints{4, 4}}})},
      3, 0));
  b.add("x", {4, 6});
  b.add("w", {6, 8});
  b.add("b", {8});
  {
    std::vector<Operator> ops = {op(O::Add), op(O::MatMul)};
    for (const char* act : {"none", "relu", "gelu", "sigmoid", "tanh"})
      ops.push_back(
          op(O::Linear, {{"out_features", std::int64_t{8}}, {"activation", std::string(act)}}));
    for (O t : {O::Relu, O::Gelu, O::Sigmoid, O::Tanh}) ops.push_back(op(t));
    limit(b.take("algebra.linear", ops, 2, 0));
  }

  // Fusion: an operator with an activation attribute equals the operator followed by the
  // activation.
  const std::vector<std::pair<std::string, O>> acts = {
      {"relu", O::Relu}, {"gelu", O::Gelu}, {"sigmoid", O::Sigmoid}, {"tanh", O::Tanh}};
  for (const auto& [act, act_op] : acts) {
    b.add("x", {2, 4, 6, 6});
    b.add("w", {4, 4, 3, 3});
    b.add("b", {4});
    b.add("s", {4});
    // The unfused operators state "activation": "none": a source pattern without it would also
    // match an operator that already has an activation.
    Attributes conv = {{"out_channels", std::int64_t{4}},
                       {"kernel", Ints{3, 3}},
                       {"padding", Ints{1, 1}},
                       {"activation", std::string("none")}};
    Attributes fused = conv;
    fused.set("activation", act);
    Family f = b.take("fusion." + act,
                      {op(O::Conv2D, conv), op(O::Conv2D, fused), op(act_op),
                       op(O::BatchNorm, {{"activation", std::string("none")}}),
                       op(O::BatchNorm, {{"activation", act}})},
                      2, 0);
    f.skeletons = {{{0, {"x", "w"}}, {2, {"#0"}}},      {{1, {"x", "w"}}},
                   {{0, {"x", "w", "b"}}, {2, {"#0"}}}, {{1, {"x", "w", "b"}}},
                   {{3, {"x", "s", "b"}}, {2, {"#0"}}}, {{4, {"x", "s", "b"}}}};
    out.push_back(std::move(f));
  }

  // Transformer MLP blocks (Linear, activation, Linear; fused or not; with biases or not), split as
  // Megatron-LM does: the first Linear by output columns, the second by its reduction dim, one
  // Reduce.
  if (max_ops >= 4) {
    for (const auto& [act, act_op] :
         std::vector<std::pair<std::string, O>>{{"relu", O::Relu}, {"gelu", O::Gelu}}) {
      for (bool bias : {false, true}) {
        b.add("x", {4, 6});
        b.add("w1", {6, 8});
        b.add("b1", {8});
        b.add("w2", {8, 6});
        b.add("b2", {6});
        Family f =
            b.take(fmt::format("block.mlp.{}{}", act, bias ? ".bias" : ""),
                   {op(O::Linear,
                       {{"out_features", std::int64_t{8}}, {"activation", std::string("none")}}),
                    op(act_op),
                    op(O::Linear,
                       {{"out_features", std::int64_t{6}}, {"activation", std::string("none")}}),
                    op(O::Linear, {{"out_features", std::int64_t{8}}, {"activation", act}})},
                   3, 6);
        auto w1 =
            bias ? std::vector<std::string>{"x", "w1", "b1"} : std::vector<std::string>{"x", "w1"};
        auto w2 = [&](const char* in) {
          return bias ? std::vector<std::string>{in, "w2", "b2"}
                      : std::vector<std::string>{in, "w2"};
        };
        f.skeletons = {{{0, w1}, {1, {"#0"}}, {2, w2("#1")}}, {{3, w1}, {2, w2("#0")}}};
        f.dims = {0, 1};
        f.max_chain = 1;
        f.extra_ops = 9 - max_ops;
        out.push_back(std::move(f));
      }
    }
  }

  // Hybrids: a Linear and its activation with parallel operators between them.
  b.add("x", {4, 6}, true, {0});
  b.add("w", {6, 8});
  limit(b.take(
      "hybrid.linear",
      {op(O::Linear, {{"out_features", std::int64_t{8}}, {"activation", std::string("none")}}),
       op(O::Relu)},
      2, 2));
  return out;
}

}  // namespace unity::rules::gen
