#pragma once
// The models of the paper's evaluation (Table 1, section 6.1) at the paper's sizes, plus the MLP of
// its Figure 1, and the decoder families large models are planned for today: gpt (Megatron-LM's
// Table 1 models, mixed-precision fp16) and llama (Llama-2, bf16). Batch sizes are per device.
#include <cstdint>
#include <string>
#include <vector>

#include "unity/core/pcg/graph.h"

namespace unity::zoo {

struct ModelInfo {
  std::string name;
  std::string description;
  std::int64_t default_batch;  // per device
  std::string family;          // "gpt", "llama"; empty for the paper's models
};

// New sizes for a member of the gpt or llama family (`--layers --hidden --heads --seq --vocab`);
// 0 keeps the member's own. The feed-forward width follows the hidden size (4 x hidden for gpt,
// the member's ratio for llama), and llama keeps its ratio of query to key/value heads.
struct TransformerResize {
  std::int64_t layers = 0, hidden = 0, heads = 0, seq = 0, vocab = 0;
  std::int64_t ffn = 0;         // the feed-forward width; 0: it follows the hidden size
  std::int64_t kv_heads = 0;    // key/value heads; 0: as many groups as the member's
  std::int64_t head_dim = 0;    // each attention head's size; 0: the member's (hidden / heads)
  bool tie_embeddings = false;  // the head reads the token embedding's table (tied_weights.h)
  bool empty() const {
    return !layers && !hidden && !heads && !seq && !vocab && !ffn && !kv_heads && !head_dim &&
           !tie_embeddings;
  }
};

const std::vector<ModelInfo>& models();
bool has_model(const std::string& name);
// batch <= 0 means the model's default per-device batch. Throws InputError on an unknown name,
// listing the known ones.
Graph build(const std::string& name, std::int64_t batch = 0);
// Throws InputError when `resize` is not empty and the model is not of a family, or when the new
// sizes do not make a model (heads must divide the hidden size unless head_dim is given).
Graph build(const std::string& name, std::int64_t batch, const TransformerResize& resize);

}  // namespace unity::zoo
