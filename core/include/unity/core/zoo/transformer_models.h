#pragma once
// Decoder-only transformers at any size, built outside the zoo's registry (zoo::build offers the
// named members, such as llama-7b): for tests and studies that need a size the zoo does not list.
#include <cstdint>

#include "unity/core/pcg/data_type.h"
#include "unity/core/pcg/graph.h"

namespace unity::zoo {

// The sizes that define a decoder of the gpt and llama families (what `--layers --hidden --heads
// --seq --vocab --ffn --kv-heads --head-dim` change).
struct TransformerSizes {
  std::int64_t layers, hidden, heads, kv_heads, ffn, seq, vocab;
  std::int64_t head_dim = 0;  // each attention head's size; 0: hidden / heads
  bool tied = false;          // the head reads the token embedding's table (tied_weights.h)

  // How the decoders of Hugging Face's families differ from the zoo's (core/src/hf/hf_model.cpp);
  // the defaults build the zoo's gpt and llama members as they always were.
  std::int64_t positions = 0;      // gpt: rows of the learned position table (0: seq)
  bool attention_bias = false;     // a bias after the attention's output projection
  bool layer_norm = false;         // llama: LayerNorm with a bias instead of RMSNorm (GPT-NeoX)
  bool gated_mlp = true;           // llama: down(act(gate(h)) * up(h)); false: down(act(up(h)))
  bool gelu = false;               // llama: GELU instead of SiLU (Gemma's GeGLU, GPT-NeoX)
  bool mlp_bias = false;           // llama: biases on the MLP's linear layers (GPT-NeoX)
  bool parallel_residual = false;  // llama: x + attn(norm(x)) + mlp(norm'(x)) (GPT-NeoX)
  bool sandwich_norms = false;     // llama: a norm after the attention and the MLP (Gemma 2, 3)
};

// Llama-2 (core/src/zoo/llama.cpp): a graph named "llama" with batch `batch`, every float tensor
// in `dtype`. Throws ShapeError when the sizes do not make a model (heads must divide hidden
// unless head_dim is given, kv_heads must divide heads).
Graph build_llama(std::int64_t batch, const TransformerSizes& sizes,
                  DataType dtype = DataType::Float32);

}  // namespace unity::zoo
