#pragma once
// Convenience layer over Graph for writing models by hand (the zoo, tests): creates the weight
// nodes an operator needs and names them after the operator ("fc1.weight").
#include <optional>
#include <string>
#include <vector>

#include "unity/core/pcg/graph.h"

namespace unity {

enum class Activation { None, Relu, Gelu, Sigmoid, Tanh };
std::string_view to_string(Activation a);
Activation activation_from_string(std::string_view name);  // throws ShapeError on unknown names

// MultiHeadAttention's optional attributes; the defaults add none, so the node is the plain one.
struct AttentionOptions {
  std::int64_t kv_heads = 0;  // grouped-query attention: key/value heads (0: as many as heads)
  std::int64_t head_dim = 0;  // each head's size (0: the embedding size over the heads)
  bool rotary = false;        // rotary position embeddings on the queries and keys
  bool causal = false;        // each position attends to itself and earlier positions only
  std::int64_t window = 0;    // causal: only the last `window` positions, itself included (0: all)
};

// LatentAttention's sizes (DeepSeek-V3: 128 heads, q_lora 1536, kv_lora 512, nope 128, rope 64,
// v 128).
struct LatentAttentionSizes {
  std::int64_t heads = 0;
  std::int64_t q_lora = 0;  // 0: queries straight from x (DeepSeek-V2-Lite)
  std::int64_t kv_lora = 0;
  std::int64_t nope = 0, rope = 0, v = 0;
  bool causal = true;
  double rotary_base = 10000;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(Graph& graph) : g_(graph) {}
  Graph& graph() { return g_; }
  const ParallelTensorShape& shape(TensorRef t) const { return g_.shape(t); }

  TensorRef input(const std::string& name, const std::vector<std::int64_t>& sizes,
                  DataType dtype = DataType::Float32);
  // Weights are created in weight_dtype() (float32 unless set).
  TensorRef weight(const std::string& name, const std::vector<std::int64_t>& sizes);
  void set_weight_dtype(DataType dtype) { weight_dtype_ = dtype; }
  DataType weight_dtype() const { return weight_dtype_; }

  // x [..., in] -> [..., out]; weight [in, out], bias [out].
  TensorRef linear(TensorRef x, std::int64_t out, const std::string& name, bool bias = true,
                   Activation act = Activation::None);
  TensorRef matmul(TensorRef a, TensorRef b, const std::string& name);
  TensorRef batch_matmul(TensorRef a, TensorRef b, const std::string& name);
  // x [N, C, H, W]; weight [out, C/groups, kh, kw].
  TensorRef conv2d(TensorRef x, std::int64_t out_channels, std::vector<std::int64_t> kernel,
                   std::vector<std::int64_t> stride, std::vector<std::int64_t> padding,
                   const std::string& name, std::int64_t groups = 1, bool bias = false,
                   Activation act = Activation::None);
  TensorRef max_pool(TensorRef x, std::vector<std::int64_t> kernel,
                     std::vector<std::int64_t> stride, std::vector<std::int64_t> padding,
                     const std::string& name);
  TensorRef avg_pool(TensorRef x, std::vector<std::int64_t> kernel,
                     std::vector<std::int64_t> stride, std::vector<std::int64_t> padding,
                     const std::string& name);
  TensorRef global_avg_pool(TensorRef x, const std::string& name);
  TensorRef batch_norm(TensorRef x, const std::string& name, bool relu = false);
  TensorRef layer_norm(TensorRef x, const std::string& name);  // over the last dim, with gamma/beta
  // LayerNorm with "rms" = 1 over the last dim: x / sqrt(mean(x^2) + eps) * gamma (no beta).
  TensorRef rms_norm(TensorRef x, const std::string& name);
  // With head size D (options.head_dim, else E / heads) and G = kv_heads: w_q [E, heads * D],
  // w_k, w_v [E, G * D], w_o [heads * D, E]; the output is [N, S, E] like q.
  TensorRef multi_head_attention(TensorRef q, TensorRef k, TensorRef v, std::int64_t heads,
                                 const std::string& name, const AttentionOptions& options = {});
  // Multi-head latent attention over x [b, s, E] (core/src/ops/latent_attention.cpp): weights
  // name.w_dq, .q_norm (with query compression), .w_uq, .w_dkv, .kv_norm, .w_ukv, .w_o.
  TensorRef latent_attention(TensorRef x, const LatentAttentionSizes& sizes,
                             const std::string& name);
  TensorRef embedding(TensorRef indices, std::int64_t entries, std::int64_t dim,
                      const std::string& name);
  // indices [N, bag] -> [N, dim], aggregated by "sum" or "mean".
  TensorRef embedding_bag(TensorRef indices, std::int64_t entries, std::int64_t dim,
                          const std::string& name, const std::string& aggregate = "sum");

  // A mixture-of-experts router as PyTorch writes it: scores = x [..., H] times [H, E] (no bias),
  // softmax (or sigmoid) over the experts, the top_k picked (and, with `normalize`, divided by
  // their sum) and scattered back into zeros: gates [..., E], zero where an expert is not picked.
  TensorRef moe_router(TensorRef x, std::int64_t experts, std::int64_t top_k,
                       const std::string& name, bool sigmoid = false, bool normalize = false);
  // The Experts operator over x [..., H] and gates [..., E]: w1 [E, H, ffn], w2 [E, ffn, H] and,
  // gated (SwiGLU), w3 [E, H, ffn]; else GELU. route_groups > 1 with 0 < route_group_top_k <
  // route_groups: the router keeps each token to that many of as many contiguous expert groups
  // (DeepSeek's node-limited routing), which the expert-parallel dispatch is costed by.
  TensorRef experts(TensorRef x, TensorRef gates, std::int64_t ffn, std::int64_t top_k,
                    const std::string& name, bool gated = true, std::int64_t route_groups = 0,
                    std::int64_t route_group_top_k = 0);
  TensorRef unary(OpType type, TensorRef x, const std::string& name);
  TensorRef relu(TensorRef x, const std::string& name) { return unary(OpType::Relu, x, name); }
  TensorRef gelu(TensorRef x, const std::string& name) { return unary(OpType::Gelu, x, name); }
  TensorRef sigmoid(TensorRef x, const std::string& name) {
    return unary(OpType::Sigmoid, x, name);
  }
  TensorRef tanh(TensorRef x, const std::string& name) { return unary(OpType::Tanh, x, name); }
  TensorRef dropout(TensorRef x, double rate, const std::string& name);
  TensorRef binary(OpType type, TensorRef a, TensorRef b, const std::string& name);
  TensorRef add(TensorRef a, TensorRef b, const std::string& name) {
    return binary(OpType::Add, a, b, name);
  }
  TensorRef mul(TensorRef a, TensorRef b, const std::string& name) {
    return binary(OpType::Mul, a, b, name);
  }

  TensorRef concat(const std::vector<TensorRef>& xs, int axis, const std::string& name);
  std::vector<TensorRef> split(TensorRef x, int axis, const std::vector<std::int64_t>& sizes,
                               const std::string& name);
  TensorRef reshape(TensorRef x, const std::vector<std::int64_t>& sizes, const std::string& name);
  TensorRef flatten(TensorRef x, const std::string& name, int axis = 1);
  TensorRef transpose(TensorRef x, const std::vector<std::int64_t>& perm, const std::string& name);
  TensorRef softmax(TensorRef x, const std::string& name, int axis = -1);
  TensorRef reduce_sum(TensorRef x, const std::vector<std::int64_t>& axes, bool keepdims,
                       const std::string& name);
  TensorRef reduce_mean(TensorRef x, const std::vector<std::int64_t>& axes, bool keepdims,
                        const std::string& name);

  // logits [N, C], labels [N] (int64) -> per-sample loss [N].
  TensorRef softmax_cross_entropy(TensorRef logits, TensorRef labels, const std::string& name);
  TensorRef mse_loss(TensorRef prediction, TensorRef target, const std::string& name);

  // Parallel operators (paper 3.3).
  TensorRef partition(TensorRef x, int dim, int degree, const std::string& name = {});
  TensorRef combine(TensorRef x, int dim, int degree, const std::string& name = {});
  TensorRef replicate(TensorRef x, int degree, const std::string& name = {});
  TensorRef reduce(TensorRef x, int degree, const std::string& name = {});
  TensorRef all_reduce(TensorRef x, int degree, const std::string& name = {});

  TensorRef op(OpType type, Attributes attrs, std::vector<TensorRef> inputs,
               const std::string& name);

 private:
  std::string auto_name(OpType type, const std::string& name);
  Graph& g_;
  int anonymous_ = 0;
  DataType weight_dtype_ = DataType::Float32;
};

}  // namespace unity
