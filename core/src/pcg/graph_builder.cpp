#include "unity/core/pcg/graph_builder.h"

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity {

std::string_view to_string(Activation a) {
  switch (a) {
    case Activation::Relu:
      return "relu";
    case Activation::Gelu:
      return "gelu";
    case Activation::Sigmoid:
      return "sigmoid";
    case Activation::Tanh:
      return "tanh";
    default:
      return "none";
  }
}

Activation activation_from_string(std::string_view name) {
  for (auto a : {Activation::None, Activation::Relu, Activation::Gelu, Activation::Sigmoid,
                 Activation::Tanh})
    if (to_string(a) == name) return a;
  throw ShapeError(
      fmt::format("unknown activation '{}' (expected none, relu, gelu, sigmoid or tanh)", name));
}

std::string GraphBuilder::auto_name(OpType type, const std::string& name) {
  if (!name.empty()) return name;
  return fmt::format("{}_{}", to_string(type), anonymous_++);
}

TensorRef GraphBuilder::op(OpType type, Attributes attrs, std::vector<TensorRef> inputs,
                           const std::string& name) {
  return {g_.add(Operator{type, std::move(attrs), auto_name(type, name)}, std::move(inputs)), 0};
}

TensorRef GraphBuilder::input(const std::string& name, const std::vector<std::int64_t>& sizes,
                              DataType dtype) {
  return g_.add_input(name, sizes, dtype);
}

TensorRef GraphBuilder::weight(const std::string& name, const std::vector<std::int64_t>& sizes) {
  return g_.add_weight(name, sizes, weight_dtype_);
}

TensorRef GraphBuilder::linear(TensorRef x, std::int64_t out, const std::string& name, bool bias,
                               Activation act) {
  const std::int64_t in = shape(x).dims.back().size;
  std::vector<TensorRef> inputs{x, weight(name + ".weight", {in, out})};
  if (bias) inputs.push_back(weight(name + ".bias", {out}));
  Attributes a{{"out_features", out}};
  if (act != Activation::None) a.set("activation", std::string(to_string(act)));
  return op(OpType::Linear, std::move(a), std::move(inputs), name);
}

TensorRef GraphBuilder::moe_router(TensorRef x, std::int64_t experts, std::int64_t top_k,
                                   const std::string& name, bool sigmoid, bool normalize) {
  TensorRef scores = linear(x, experts, name + ".gate", /*bias=*/false);
  scores = sigmoid ? unary(OpType::Sigmoid, scores, name + ".sigmoid")
                   : softmax(scores, name + ".softmax");
  const std::int64_t last = shape(scores).rank() - 1;
  const TensorRef values =
      op(OpType::TopK, {{"k", top_k}, {"axis", last}}, {scores}, name + ".topk");
  const TensorRef indices{values.node, 1};
  TensorRef picked = values;
  if (normalize)
    picked = binary(OpType::Div, values, reduce_sum(values, {last}, true, name + ".sum"),
                    name + ".normalize");
  const TensorRef zeros = op(OpType::ScalarMul, {{"scalar", 0.0}}, {scores}, name + ".zeros");
  return op(OpType::ScatterElements, {{"axis", last}}, {zeros, indices, picked}, name + ".gates");
}

TensorRef GraphBuilder::experts(TensorRef x, TensorRef gates, std::int64_t ffn, std::int64_t top_k,
                                const std::string& name, bool gated, std::int64_t route_groups,
                                std::int64_t route_group_top_k) {
  const std::int64_t hidden = shape(x).dims.back().size;
  const std::int64_t e = shape(gates).dims.back().size;
  std::vector<TensorRef> inputs{x, gates, weight(name + ".w1", {e, hidden, ffn}),
                                weight(name + ".w2", {e, ffn, hidden})};
  if (gated) inputs.push_back(weight(name + ".w3", {e, hidden, ffn}));
  Attributes a{{"top_k", top_k}};
  if (!gated) a.set("mlp", std::string("gelu"));
  if (route_groups > 1) {
    a.set("route_groups", route_groups);
    a.set("route_group_top_k", route_group_top_k);
  }
  return op(OpType::Experts, std::move(a), std::move(inputs), name);
}

TensorRef GraphBuilder::matmul(TensorRef a, TensorRef b, const std::string& name) {
  return op(OpType::MatMul, {}, {a, b}, name);
}

TensorRef GraphBuilder::batch_matmul(TensorRef a, TensorRef b, const std::string& name) {
  return op(OpType::BatchMatMul, {}, {a, b}, name);
}

TensorRef GraphBuilder::conv2d(TensorRef x, std::int64_t out_channels,
                               std::vector<std::int64_t> kernel, std::vector<std::int64_t> stride,
                               std::vector<std::int64_t> padding, const std::string& name,
                               std::int64_t groups, bool bias, Activation act) {
  const std::int64_t c = shape(x).dims.at(1).size;
  std::vector<TensorRef> inputs{
      x, weight(name + ".weight", {out_channels, c / groups, kernel.at(0), kernel.at(1)})};
  if (bias) inputs.push_back(weight(name + ".bias", {out_channels}));
  Attributes a{{"out_channels", out_channels},
               {"kernel", kernel},
               {"stride", stride},
               {"padding", padding},
               {"groups", groups}};
  if (act != Activation::None) a.set("activation", std::string(to_string(act)));
  return op(OpType::Conv2D, std::move(a), std::move(inputs), name);
}

TensorRef GraphBuilder::max_pool(TensorRef x, std::vector<std::int64_t> kernel,
                                 std::vector<std::int64_t> stride,
                                 std::vector<std::int64_t> padding, const std::string& name) {
  return op(
      OpType::Pool2D,
      {{"pool", std::string("max")}, {"kernel", kernel}, {"stride", stride}, {"padding", padding}},
      {x}, name);
}

TensorRef GraphBuilder::avg_pool(TensorRef x, std::vector<std::int64_t> kernel,
                                 std::vector<std::int64_t> stride,
                                 std::vector<std::int64_t> padding, const std::string& name) {
  return op(
      OpType::Pool2D,
      {{"pool", std::string("avg")}, {"kernel", kernel}, {"stride", stride}, {"padding", padding}},
      {x}, name);
}

TensorRef GraphBuilder::global_avg_pool(TensorRef x, const std::string& name) {
  const auto& s = shape(x);
  const std::vector<std::int64_t> k{s.dims.at(2).size, s.dims.at(3).size};
  return avg_pool(x, k, k, {0, 0}, name);
}

TensorRef GraphBuilder::batch_norm(TensorRef x, const std::string& name, bool relu) {
  const std::int64_t c = shape(x).dims.at(1).size;
  Attributes a{{"epsilon", 1e-5}};
  if (relu) a.set("activation", std::string("relu"));
  return op(OpType::BatchNorm, std::move(a),
            {x, weight(name + ".scale", {c}), weight(name + ".bias", {c})}, name);
}

TensorRef GraphBuilder::layer_norm(TensorRef x, const std::string& name) {
  const std::int64_t d = shape(x).dims.back().size;
  return op(OpType::LayerNorm, {{"normalized_dims", std::int64_t{1}}, {"epsilon", 1e-5}},
            {x, weight(name + ".gamma", {d}), weight(name + ".beta", {d})}, name);
}

TensorRef GraphBuilder::rms_norm(TensorRef x, const std::string& name) {
  const std::int64_t d = shape(x).dims.back().size;
  return op(OpType::LayerNorm, {{"epsilon", 1e-5}, {"rms", std::int64_t{1}}},
            {x, weight(name + ".gamma", {d})}, name);
}

TensorRef GraphBuilder::multi_head_attention(TensorRef q, TensorRef k, TensorRef v,
                                             std::int64_t heads, const std::string& name,
                                             const AttentionOptions& options) {
  const std::int64_t e = shape(q).dims.at(2).size;
  Attributes a{{"num_heads", heads}};
  // Attributes at their defaults are left out, so a plain attention hashes as it always did.
  const bool implied_head_dim = heads > 0 && e % heads == 0;
  std::int64_t head_dim = implied_head_dim ? e / heads : 0;
  if (options.head_dim > 0) {
    if (!implied_head_dim || options.head_dim != head_dim) a.set("head_dim", options.head_dim);
    head_dim = options.head_dim;
  }
  std::int64_t kv_heads = heads;
  if (options.kv_heads > 0 && options.kv_heads != heads) {
    a.set("num_kv_heads", options.kv_heads);
    kv_heads = options.kv_heads;
  }
  if (options.rotary) a.set("rotary", std::int64_t{1});
  if (options.causal) a.set("causal", std::int64_t{1});
  if (options.window > 0) a.set("window", options.window);
  // Sizes that make no model (no head size, heads not positive) are left to shape inference,
  // which names the problem.
  const bool sized = head_dim > 0 && heads > 0 && kv_heads > 0;
  const std::int64_t q_width = sized ? heads * head_dim : e;
  const std::int64_t kv_width = sized ? kv_heads * head_dim : e;
  return op(OpType::MultiHeadAttention, std::move(a),
            {q, k, v, weight(name + ".w_q", {e, q_width}), weight(name + ".w_k", {e, kv_width}),
             weight(name + ".w_v", {e, kv_width}), weight(name + ".w_o", {q_width, e})},
            name);
}

TensorRef GraphBuilder::latent_attention(TensorRef x, const LatentAttentionSizes& z,
                                         const std::string& name) {
  const std::int64_t e = shape(x).dims.at(2).size;
  Attributes a{{"num_heads", z.heads},
               {"qk_nope_head_dim", z.nope},
               {"qk_rope_head_dim", z.rope},
               {"v_head_dim", z.v}};
  if (z.causal) a.set("causal", std::int64_t{1});
  if (z.rotary_base != 10000) a.set("rotary_base", z.rotary_base);
  std::vector<TensorRef> in{x};
  if (z.q_lora > 0) {
    in.push_back(weight(name + ".w_dq", {e, z.q_lora}));
    in.push_back(weight(name + ".q_norm", {z.q_lora}));
  }
  in.push_back(weight(name + ".w_uq", {z.q_lora > 0 ? z.q_lora : e, z.heads * (z.nope + z.rope)}));
  in.push_back(weight(name + ".w_dkv", {e, z.kv_lora + z.rope}));
  in.push_back(weight(name + ".kv_norm", {z.kv_lora}));
  in.push_back(weight(name + ".w_ukv", {z.kv_lora, z.heads * (z.nope + z.v)}));
  in.push_back(weight(name + ".w_o", {z.heads * z.v, e}));
  return op(OpType::LatentAttention, std::move(a), std::move(in), name);
}

TensorRef GraphBuilder::embedding(TensorRef indices, std::int64_t entries, std::int64_t dim,
                                  const std::string& name) {
  return op(OpType::Embedding, {{"num_entries", entries}, {"embedding_dim", dim}},
            {indices, weight(name + ".weight", {entries, dim})}, name);
}

TensorRef GraphBuilder::embedding_bag(TensorRef indices, std::int64_t entries, std::int64_t dim,
                                      const std::string& name, const std::string& aggregate) {
  return op(OpType::EmbeddingBag,
            {{"num_entries", entries}, {"embedding_dim", dim}, {"aggregate", aggregate}},
            {indices, weight(name + ".weight", {entries, dim})}, name);
}

TensorRef GraphBuilder::unary(OpType type, TensorRef x, const std::string& name) {
  return op(type, {}, {x}, name);
}

TensorRef GraphBuilder::dropout(TensorRef x, double rate, const std::string& name) {
  return op(OpType::Dropout, {{"rate", rate}}, {x}, name);
}

TensorRef GraphBuilder::binary(OpType type, TensorRef a, TensorRef b, const std::string& name) {
  return op(type, {}, {a, b}, name);
}

TensorRef GraphBuilder::concat(const std::vector<TensorRef>& xs, int axis,
                               const std::string& name) {
  return op(OpType::Concat, {{"axis", std::int64_t{axis}}}, xs, name);
}

std::vector<TensorRef> GraphBuilder::split(TensorRef x, int axis,
                                           const std::vector<std::int64_t>& sizes,
                                           const std::string& name) {
  const TensorRef first =
      op(OpType::Split, {{"axis", std::int64_t{axis}}, {"sizes", sizes}}, {x}, name);
  std::vector<TensorRef> out;
  for (int i = 0; i < static_cast<int>(sizes.size()); ++i) out.push_back({first.node, i});
  return out;
}

TensorRef GraphBuilder::reshape(TensorRef x, const std::vector<std::int64_t>& sizes,
                                const std::string& name) {
  return op(OpType::Reshape, {{"shape", sizes}}, {x}, name);
}

TensorRef GraphBuilder::flatten(TensorRef x, const std::string& name, int axis) {
  return op(OpType::Flatten, {{"axis", std::int64_t{axis}}}, {x}, name);
}

TensorRef GraphBuilder::transpose(TensorRef x, const std::vector<std::int64_t>& perm,
                                  const std::string& name) {
  return op(OpType::Transpose, {{"perm", perm}}, {x}, name);
}

TensorRef GraphBuilder::softmax(TensorRef x, const std::string& name, int axis) {
  if (axis < 0) axis += shape(x).rank();
  return op(OpType::Softmax, {{"axis", std::int64_t{axis}}}, {x}, name);
}

TensorRef GraphBuilder::reduce_sum(TensorRef x, const std::vector<std::int64_t>& axes,
                                   bool keepdims, const std::string& name) {
  return op(OpType::ReduceSum, {{"axes", axes}, {"keepdims", std::int64_t{keepdims}}}, {x}, name);
}

TensorRef GraphBuilder::reduce_mean(TensorRef x, const std::vector<std::int64_t>& axes,
                                    bool keepdims, const std::string& name) {
  return op(OpType::ReduceMean, {{"axes", axes}, {"keepdims", std::int64_t{keepdims}}}, {x}, name);
}

TensorRef GraphBuilder::softmax_cross_entropy(TensorRef logits, TensorRef labels,
                                              const std::string& name) {
  return op(OpType::SoftmaxCrossEntropy, {}, {logits, labels}, name);
}

TensorRef GraphBuilder::mse_loss(TensorRef prediction, TensorRef target, const std::string& name) {
  return op(OpType::MSELoss, {}, {prediction, target}, name);
}

TensorRef GraphBuilder::partition(TensorRef x, int dim, int degree, const std::string& name) {
  return op(OpType::Partition, {{"dim", std::int64_t{dim}}, {"degree", std::int64_t{degree}}}, {x},
            name);
}

TensorRef GraphBuilder::combine(TensorRef x, int dim, int degree, const std::string& name) {
  return op(OpType::Combine, {{"dim", std::int64_t{dim}}, {"degree", std::int64_t{degree}}}, {x},
            name);
}

TensorRef GraphBuilder::replicate(TensorRef x, int degree, const std::string& name) {
  return op(OpType::Replicate, {{"degree", std::int64_t{degree}}}, {x}, name);
}

TensorRef GraphBuilder::reduce(TensorRef x, int degree, const std::string& name) {
  return op(OpType::Reduce, {{"degree", std::int64_t{degree}}}, {x}, name);
}

TensorRef GraphBuilder::all_reduce(TensorRef x, int degree, const std::string& name) {
  return op(OpType::AllReduce, {{"degree", std::int64_t{degree}}}, {x}, name);
}

}  // namespace unity
