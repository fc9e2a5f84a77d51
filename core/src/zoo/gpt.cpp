// GPT decoders as Megatron-LM trains them (Narayanan et al., SC'21, Table 1; the shapes are in
// shared/reference/megatron-lm-table1.md): learned token and position embeddings, pre-LayerNorm
// blocks of causal self-attention (heads of hidden / heads unless the sizes give head_dim) and a
// GeLU MLP of 4 x hidden, a final LayerNorm, and a head over the vocabulary trained with softmax
// cross-entropy on every token.
//
// The head reads its own [hidden, vocab] table. Megatron-LM ties it to the token embedding; with
// pipeline stages the first and the last stage each keep a copy of that table (and all-reduce its
// gradient), which is what two tables cost, so only the parameter count of a one-stage plan is
// off by vocab x hidden (7% of gpt-1.7b, 0.1% of gpt-1t). Dropout is left out as in the rest of
// the zoo: it changes no shape, and a deterministic graph can be checked against one rank.
#include "zoo/zoo_models.h"

namespace unity::zoo::detail {
namespace {

TensorRef decoder_block(GraphBuilder& b, TensorRef x, const TransformerSizes& z,
                        const std::string& n) {
  TensorRef a = b.layer_norm(x, n + ".attention_norm");
  a = b.multi_head_attention(a, a, a, z.heads, n + ".attention",
                             {.kv_heads = z.kv_heads, .head_dim = z.head_dim, .causal = true});
  if (z.attention_bias)  // GPT-2's c_proj bias: MultiHeadAttention's projections have none
    a = b.add(a, b.weight(n + ".attention.bias", {z.hidden}), n + ".attention.bias_add");
  x = b.add(x, a, n + ".attention.add");
  TensorRef h = b.layer_norm(x, n + ".mlp_norm");
  h = b.linear(h, z.ffn, n + ".mlp.fc1");
  h = b.gelu(h, n + ".mlp.gelu");
  h = b.linear(h, z.hidden, n + ".mlp.fc2");
  return b.add(x, h, n + ".mlp.add");
}

}  // namespace

void build_gpt(GraphBuilder& b, std::int64_t batch, const TransformerSizes& z) {
  TensorRef ids = b.input("input_ids", {batch, z.seq}, DataType::Int64);
  TensorRef positions = b.input("position_ids", {batch, z.seq}, DataType::Int64);
  TensorRef labels = b.input("labels", {batch, z.seq}, DataType::Int64);
  TensorRef x = b.embedding(ids, z.vocab, z.hidden, "embed.token");
  // The table has a row per position the model was trained for (GPT-2's n_positions); the zoo's
  // members have as many as their sequence.
  const std::int64_t rows = z.positions > 0 ? z.positions : z.seq;
  x = b.add(x, b.embedding(positions, rows, z.hidden, "embed.position"), "embed.add");
  for (std::int64_t i = 0; i < z.layers; ++i)
    x = decoder_block(b, x, z, "layers." + std::to_string(i));
  x = b.layer_norm(x, "final_norm");
  TensorRef logits = b.linear(x, z.vocab, "head", /*bias=*/false);
  if (z.tied) tie_head(b.graph(), logits, "embed.token.weight");
  b.softmax_cross_entropy(logits, labels, "loss");
}

}  // namespace unity::zoo::detail
