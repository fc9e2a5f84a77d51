#pragma once
// Decoder-only transformers at any size, built outside the zoo's registry (zoo::build offers the
// named members, such as llama-7b): for tests and studies that need a size the zoo does not list.
#include <algorithm>
#include <cstdint>
#include <vector>

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
  std::int64_t positions = 0;         // gpt: rows of the learned position table (0: seq)
  bool attention_bias = false;        // a bias after the attention's output projection
  bool layer_norm = false;            // llama: LayerNorm with a bias instead of RMSNorm (GPT-NeoX)
  bool gated_mlp = true;              // llama: down(act(gate(h)) * up(h)); false: down(act(up(h)))
  bool gelu = false;                  // llama: GELU instead of SiLU (Gemma's GeGLU, GPT-NeoX)
  bool mlp_bias = false;              // llama: biases on the MLP's linear layers (GPT-NeoX)
  bool parallel_residual = false;     // llama: x + attn(norm(x)) + mlp(norm'(x)) (GPT-NeoX)
  bool shared_parallel_norm = false;  // that with one norm both read: norm' = norm (Phi)
  bool sandwich_norms = false;        // llama: a norm after the attention and the MLP (Gemma 2, 3)
  bool post_norms = false;            // llama: that norm alone, none before (OLMo 2)

  // Mixture-of-experts layers (llama family; experts 0: every layer dense). A layer's MLP is a
  // router and an Experts operator, plus shared_experts dense SwiGLU experts of expert_ffn each
  // run on every token (DeepSeek's shared expert: one MLP of shared_experts x expert_ffn, or of
  // shared_ffn where that is given, as Qwen2-MoE's is), from
  // layer dense_layers_first on, every moe_layer_step-th layer (counted from 1 with
  // step_from_one, as Qwen counts; from 0 as DeepSeek does), except the dense_layers listed.
  std::int64_t experts = 0;
  std::int64_t experts_per_token = 0;  // top-k
  std::int64_t expert_ffn = 0;
  std::int64_t shared_experts = 0;
  std::int64_t shared_ffn = 0;
  std::int64_t dense_layers_first = 0;
  std::int64_t moe_layer_step = 1;
  bool step_from_one = false;
  std::vector<std::int64_t> dense_layers = {};
  bool router_sigmoid = false;   // sigmoid scores (DeepSeek-V3) instead of a softmax
  bool normalize_top_k = false;  // the picked scores divided by their sum (Mixtral, Qwen3-MoE)
  // Node-limited routing (DeepSeek-V2/V3): the experts in route_groups contiguous groups, a
  // token's top-k taken from its best route_group_top_k of them (0: no limit).
  std::int64_t route_groups = 0;
  std::int64_t route_group_top_k = 0;

  // Sliding-window attention (Mistral, Gemma 2 and 3, gpt-oss, Phi-3): the layers windowed marks
  // (a pattern repeated over the layers; all where empty) attend to the last `window` positions
  // only (0: none).
  std::int64_t window = 0;
  std::vector<bool> windowed = {};
  bool is_windowed(std::int64_t layer) const {
    return window > 0 &&
           (windowed.empty() || windowed[static_cast<std::size_t>(layer) % windowed.size()]);
  }

  // Multi-head latent attention (DeepSeek-V2/V3; kv_lora 0: MultiHeadAttention): `heads` heads
  // whose queries and keys are qk_nope + qk_rope wide (the rope part rotated, one rotary key
  // shared by the heads) and values v_head_dim wide, through a query latent of q_lora (0: none)
  // and a key/value latent of kv_lora (LatentAttention). kv_heads and head_dim are then unused.
  std::int64_t q_lora = 0;
  std::int64_t kv_lora = 0;
  std::int64_t qk_nope = 0;
  std::int64_t qk_rope = 0;
  std::int64_t v_head_dim = 0;

  bool is_moe_layer(std::int64_t i) const {
    if (experts <= 0 || i < dense_layers_first) return false;
    if (std::find(dense_layers.begin(), dense_layers.end(), i) != dense_layers.end()) return false;
    return (step_from_one ? i + 1 : i) % std::max<std::int64_t>(1, moe_layer_step) == 0;
  }
};

// Llama-2 (core/src/zoo/llama.cpp): a graph named "llama" with batch `batch`, every float tensor
// in `dtype`. Throws ShapeError when the sizes do not make a model (heads must divide hidden
// unless head_dim is given, kv_heads must divide heads).
Graph build_llama(std::int64_t batch, const TransformerSizes& sizes,
                  DataType dtype = DataType::Float32);

}  // namespace unity::zoo
