// Llama-2 (Touvron et al., 2023; Meta's reference model.py): a decoder of pre-normalised blocks.
// - Token embedding [vocab, hidden]; no position embedding: the attention rotates its queries and
//   keys (rotary position embeddings).
// - Each layer: x + Attention(RMSNorm(x)) with rotary embeddings, a causal mask and grouped-query
//   attention (kv_heads key/value heads; heads of head_dim, hidden / heads unless given: w_q
//   [hidden, heads * head_dim], w_k and w_v [hidden, kv_heads * head_dim], w_o [heads * head_dim,
//   hidden]), then x + down(silu(gate(h)) * up(h)) with h = RMSNorm(x) (SwiGLU: gate and up
//   [hidden, ffn], down [ffn, hidden]). No biases anywhere. SiLU is Sigmoid and Mul nodes
//   (x * sigmoid(x)).
// - A final RMSNorm and an untied LM head [hidden, vocab] without bias, trained with softmax
//   cross-entropy on every token ([N, S, vocab] logits, [N, S] labels).
// Parameters: llama-7b 6,738,415,616 and llama-70b 68,976,648,192, as Meta publishes. Dropout is
// left out, as in the rest of the zoo (Llama-2 trains without it anyway).
// The Hugging Face families built here (core/src/hf/hf_model.cpp) vary it through
// TransformerSizes: LayerNorm, a plain or GELU MLP with biases and a parallel residual (GPT-NeoX),
// GeGLU and a norm after the attention and the MLP (Gemma 2 and 3), or that norm alone (OLMo 2),
// a bias after the attention;
// and DeepSeek-V2/V3 through multi-head latent attention (LatentAttention) and MoE layers.
#include "unity/core/zoo/transformer_models.h"
#include "zoo/zoo_models.h"

namespace unity::zoo {
namespace detail {
namespace {

TensorRef norm(GraphBuilder& b, TensorRef x, const TransformerSizes& z, const std::string& n) {
  return z.layer_norm ? b.layer_norm(x, n) : b.rms_norm(x, n);
}

// The attention's output projection has no bias of its own in MultiHeadAttention: it is an Add of
// a [hidden] weight after it.
TensorRef attention(GraphBuilder& b, TensorRef h, const TransformerSizes& z, std::int64_t layer,
                    const std::string& n) {
  if (z.kv_lora > 0)
    return b.latent_attention(
        h, {z.heads, z.q_lora, z.kv_lora, z.qk_nope, z.qk_rope, z.v_head_dim, true},
        n + ".attention");
  h = b.multi_head_attention(h, h, h, z.heads, n + ".attention",
                             {.kv_heads = z.kv_heads,
                              .head_dim = z.head_dim,
                              .rotary = true,
                              .causal = true,
                              .window = z.is_windowed(layer) && z.window < z.seq ? z.window : 0});
  if (z.attention_bias)
    h = b.add(h, b.weight(n + ".attention.bias", {z.hidden}), n + ".attention.bias_add");
  return h;
}

TensorRef dense_mlp(GraphBuilder& b, TensorRef h, const TransformerSizes& z, std::int64_t ffn,
                    const std::string& n) {
  const auto activation = [&](TensorRef t, const std::string& prefix) {
    return z.gelu ? b.gelu(t, prefix + ".gelu")
                  : b.mul(t, b.sigmoid(t, prefix + ".sigmoid"), prefix + ".silu");
  };
  if (!z.gated_mlp) {
    h = activation(b.linear(h, ffn, n + ".up", z.mlp_bias), n);
    return b.linear(h, z.hidden, n + ".down", z.mlp_bias);
  }
  TensorRef gate = activation(b.linear(h, ffn, n + ".gate", z.mlp_bias), n);
  TensorRef up = b.linear(h, ffn, n + ".up", z.mlp_bias);
  h = b.mul(gate, up, n + ".mul");
  return b.linear(h, z.hidden, n + ".down", z.mlp_bias);
}

// A mixture-of-experts MLP: the router's gates, the Experts operator, and the shared experts
// (one dense MLP on every token) added to their output.
TensorRef moe_mlp(GraphBuilder& b, TensorRef h, const TransformerSizes& z, const std::string& n) {
  const TensorRef gates = b.moe_router(h, z.experts, z.experts_per_token, n + ".router",
                                       z.router_sigmoid, z.normalize_top_k);
  TensorRef y = b.experts(h, gates, z.expert_ffn, z.experts_per_token, n + ".experts", !z.gelu,
                          z.route_groups, z.route_group_top_k);
  const std::int64_t shared = z.shared_ffn > 0 ? z.shared_ffn : z.shared_experts * z.expert_ffn;
  if (shared > 0) y = b.add(y, dense_mlp(b, h, z, shared, n + ".shared"), n + ".shared.add");
  return y;
}

TensorRef mlp(GraphBuilder& b, TensorRef h, const TransformerSizes& z, std::int64_t layer,
              const std::string& n) {
  return z.is_moe_layer(layer) ? moe_mlp(b, h, z, n + ".moe")
                               : dense_mlp(b, h, z, z.ffn, n + ".ffn");
}

TensorRef decoder_layer(GraphBuilder& b, TensorRef x, const TransformerSizes& z, std::int64_t layer,
                        const std::string& n) {
  if (z.parallel_residual) {  // both branches read x: x + attn(norm(x)) + mlp(norm'(x))
    const TensorRef h = norm(b, x, z, n + ".attention_norm");
    TensorRef a = attention(b, h, z, layer, n);
    TensorRef m = mlp(b, z.shared_parallel_norm ? h : norm(b, x, z, n + ".ffn_norm"), z, layer, n);
    return b.add(b.add(x, a, n + ".attention.add"), m, n + ".ffn.add");
  }
  if (z.post_norms) {  // x + norm(attn(x)), then x + norm(mlp(x))
    x = b.add(x, norm(b, attention(b, x, z, layer, n), z, n + ".post_attention_norm"),
              n + ".attention.add");
    return b.add(x, norm(b, mlp(b, x, z, layer, n), z, n + ".post_ffn_norm"), n + ".ffn.add");
  }
  TensorRef h = attention(b, norm(b, x, z, n + ".attention_norm"), z, layer, n);
  if (z.sandwich_norms) h = norm(b, h, z, n + ".post_attention_norm");
  x = b.add(x, h, n + ".attention.add");
  h = mlp(b, norm(b, x, z, n + ".ffn_norm"), z, layer, n);
  if (z.sandwich_norms) h = norm(b, h, z, n + ".post_ffn_norm");
  return b.add(x, h, n + ".ffn.add");
}

}  // namespace

void build_llama(GraphBuilder& b, std::int64_t batch, const TransformerSizes& z, DataType dtype) {
  const DataType previous = b.weight_dtype();
  b.set_weight_dtype(dtype);  // the embedding's dtype is the activations' dtype
  TensorRef ids = b.input("input_ids", {batch, z.seq}, DataType::Int64);
  TensorRef labels = b.input("labels", {batch, z.seq}, DataType::Int64);
  TensorRef x = b.embedding(ids, z.vocab, z.hidden, "embed");
  for (std::int64_t i = 0; i < z.layers; ++i)
    x = decoder_layer(b, x, z, i, "layers." + std::to_string(i));
  x = norm(b, x, z, "norm");
  TensorRef logits = b.linear(x, z.vocab, "lm_head", /*bias=*/false);
  if (z.tied) tie_head(b.graph(), logits, "embed.weight");
  b.softmax_cross_entropy(logits, labels, "loss");
  b.set_weight_dtype(previous);
}

}  // namespace detail

Graph build_llama(std::int64_t batch, const TransformerSizes& s, DataType dtype) {
  Graph graph;
  graph.name = "llama";
  graph.batch_size = batch;
  GraphBuilder builder(graph);
  detail::build_llama(builder, batch, s, dtype);
  return graph;
}

}  // namespace unity::zoo
