// BERT-Large (paper section 6.1: batch 4 per device, sequence length 512): 24 encoder layers,
// hidden size 1024, 16 attention heads, feed-forward size 4096, vocabulary 30522.
// - Embeddings: word (30522), position (512) and token-type (2) embeddings of the three int64 id
//   inputs, summed and layer-normalised.
// - Each layer (post-norm, as BERT): MultiHeadAttention (q = k = v = x; four [1024, 1024] weights,
//   no biases) -> Add residual -> LayerNorm -> Linear 4096 -> Gelu -> Linear 1024 -> Add residual
//   -> LayerNorm.
// - Head: a sentence-pair classifier (BERT's pooler and a 2-way classifier, as in NSP and GLUE
//   fine-tuning) trained with softmax cross-entropy. The pooler averages over the sequence instead
//   of slicing the [CLS] token: a slice would be a Split whose other output nobody consumes, and
//   every sink of a zoo graph is its loss. A masked-LM head would need [N*S, vocab] logits, i.e. a
//   Reshape that merges the sample dim and so forbids data parallelism through the head.
// Parameters: 335,045,634 (31.8M embeddings, 24 x 12.6M layers, 1.05M head). Dropout is left out:
// it changes no shape or parameter, and a deterministic graph lets runs be checked against a
// one-rank reference.
//
// Scaled (scaled_zoo.h): hidden size, feed-forward size, sequence, vocabulary and depth shrink. The
// head count stays 16 while each head keeps at least 4 dimensions (the hidden size is rounded to a
// multiple of the heads).
#include <algorithm>

#include "zoo/zoo_models.h"

namespace unity::zoo::detail {
namespace {

constexpr std::int64_t kLayers = 24;
constexpr std::int64_t kHidden = 1024;
constexpr std::int64_t kHeads = 16;
constexpr std::int64_t kFeedForward = 4096;
constexpr std::int64_t kSeqLen = 512;
constexpr std::int64_t kVocab = 30522;
constexpr std::int64_t kTokenTypes = 2;
constexpr std::int64_t kClasses = 2;

struct Sizes {
  std::int64_t layers, hidden, heads, ff, seq, vocab;  // positions: one per sequence element
};

Sizes sizes(double scale) {
  Sizes z{};
  z.heads = std::clamp<std::int64_t>(scaled_size(kHidden, scale, 4) / 4, 1, kHeads);
  z.hidden = std::max(z.heads, scaled_size(kHidden, scale, 8) / z.heads * z.heads);
  z.ff = scaled_size(kFeedForward, scale, 8);
  z.seq = scaled_size(kSeqLen, scale, 4);
  z.layers = scaled_size(kLayers, scale, 1);
  z.vocab = scaled_size(kVocab, scale, 16);
  return z;
}

TensorRef encoder_layer(GraphBuilder& b, TensorRef x, const Sizes& z, const std::string& n) {
  TensorRef a = b.multi_head_attention(x, x, x, z.heads, n + ".attention");
  x = b.add(a, x, n + ".attention.add");
  x = b.layer_norm(x, n + ".attention.layer_norm");
  TensorRef h = b.linear(x, z.ff, n + ".ffn.fc1");
  h = b.gelu(h, n + ".ffn.gelu");
  h = b.linear(h, z.hidden, n + ".ffn.fc2");
  x = b.add(h, x, n + ".ffn.add");
  return b.layer_norm(x, n + ".ffn.layer_norm");
}

}  // namespace

void build_bert_large(GraphBuilder& b, std::int64_t batch, double scale) {
  const Sizes z = sizes(scale);
  TensorRef ids = b.input("input_ids", {batch, z.seq}, DataType::Int64);
  TensorRef types = b.input("token_type_ids", {batch, z.seq}, DataType::Int64);
  TensorRef positions = b.input("position_ids", {batch, z.seq}, DataType::Int64);
  TensorRef labels = b.input("label", {batch}, DataType::Int64);

  TensorRef x = b.embedding(ids, z.vocab, z.hidden, "embeddings.word");
  TensorRef p = b.embedding(positions, z.seq, z.hidden, "embeddings.position");
  TensorRef t = b.embedding(types, kTokenTypes, z.hidden, "embeddings.token_type");
  x = b.add(x, p, "embeddings.add_position");
  x = b.add(x, t, "embeddings.add_token_type");
  x = b.layer_norm(x, "embeddings.layer_norm");

  for (std::int64_t i = 0; i < z.layers; ++i) {
    x = encoder_layer(b, x, z, "encoder." + std::to_string(i));
  }

  x = b.reduce_mean(x, {1}, /*keepdims=*/false, "pooler.mean");  // [N, S, E] -> [N, E]
  x = b.linear(x, z.hidden, "pooler.dense");
  x = b.tanh(x, "pooler.tanh");
  x = b.linear(x, kClasses, "classifier");
  b.softmax_cross_entropy(x, labels, "loss");
}

}  // namespace unity::zoo::detail
