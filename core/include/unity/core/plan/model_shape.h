#pragma once
// The shape of a decoder-only transformer as a training framework's launch names it (layers,
// hidden size, heads, KV heads, head size, FFN width, vocabulary, sequence, tied head) and the
// family choices that tell one framework's model apart from another's (norm, gated MLP,
// activation, biases, rotary or learned positions). Read off a serial PCG by its structure, not
// by its names; `unity optimize` records it in the plan's summary ("model_shape"), where a plan
// whose PCG the search rewrote can no longer show it, and adds what only a Hugging Face config
// says (rope theta, q/k/v biases, q/k norms, sliding window).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "unity/core/pcg/graph.h"

namespace unity {

namespace hf {
struct HfConfig;
}

// A list of 0s and 1s as the Python list expression Megatron-LM's per-layer flags evaluate
// (--moe-layer-freq, --window-attn-skip-freq), run-length written: "([0]*3+[1]*58)".
std::string python_list_expression(const std::vector<int>& flags);

// A mixture-of-experts decoder's experts, read off its Experts operators and their routers
// (graph_builder.h's moe_router: a Linear to E scores, Softmax or Sigmoid, TopK, the picked
// scores renormalised or not, scattered into the gates).
struct MoeShape {
  std::int64_t experts = 0;      // routed experts of each MoE layer
  std::int64_t top_k = 0;        // experts a token goes through
  std::int64_t expert_ffn = 0;   // each routed expert's FFN width
  std::int64_t shared_ffn = 0;   // the shared experts' MLP, all of them together (0: none)
  std::vector<int> layers;       // per transformer layer: 1 with experts, 0 dense
  bool sigmoid = false;          // the router scores with a sigmoid (DeepSeek-V3), else softmax
  bool normalize_top_k = false;  // the picked scores divided by their sum
  bool gated = true;             // SwiGLU experts, else GELU ones
  // Node-limited routing: a token's experts from its best route_group_top_k of route_groups
  // contiguous groups (0: no limit; Megatron-LM's --moe-router-num-groups,
  // --moe-router-group-topk).
  std::int64_t route_groups = 0;
  std::int64_t route_group_top_k = 0;

  std::int64_t moe_layers() const;
  std::int64_t dense_layers() const;
  // Megatron-LM's --moe-layer-freq of `layers`: "1" when every layer has experts, else the
  // Python list expression it evaluates, run-length written: "([0]*3+[1]*58)".
  std::string layer_freq() const;
};

// Multi-head latent attention (DeepSeek-V2/V3), read off LatentAttention's attributes and
// weights.
struct LatentAttentionShape {
  std::int64_t q_lora_rank = 0;  // 0: queries projected directly (no query latent)
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_head_dim = 0;       // each head's query/key part without rotation (qk_nope)
  std::int64_t qk_rope_head_dim = 0;  // each head's rotated part
  std::int64_t v_head_dim = 0;
};

struct ModelShape {
  // ffn: the dense MLPs' width; where every layer has experts, the experts' (moe->expert_ffn).
  // A latent attention's head_dim is its value heads' (v_head_dim) and kv_heads its heads.
  std::int64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  std::int64_t seq = 0;
  std::int64_t positions = 0;         // rows of a learned position table (0: none)
  bool tied = false;                  // the head reads the token embedding's table
  bool rotary = false;                // rotary position embeddings
  bool rms_norm = false;              // RMSNorm (else LayerNorm with a bias)
  bool gated_mlp = false;             // down(act(gate(h)) * up(h)) (else down(act(up(h))))
  std::string activation;             // "gelu" or "silu"
  bool mlp_bias = false;              // biases on the MLP's linear layers
  bool attention_bias = false;        // a bias after the attention's output projection
  bool parallel_residual = false;     // x + attn(norm(x)) + mlp(norm'(x)) (GPT-NeoX)
  bool shared_parallel_norm = false;  // that with one norm both branches read (Phi)
  bool sandwich_norms = false;        // norms after the attention and the MLP too (Gemma 2, 3)
  bool post_norms = false;            // norms after the attention and the MLP only (OLMo 2)
  std::optional<MoeShape> moe;        // mixture-of-experts layers
  std::optional<LatentAttentionShape> mla;  // multi-head latent attention instead of MHA
  // What a Hugging Face config says beyond the graph (hf_config.h); empty where the model is not
  // one.
  std::string hf_architecture;  // "LlamaForCausalLM", ...
  std::string hf_name;          // the config's folder, "Llama-3.1-8B"
  double rope_theta = 0;        // 0: not given
  double rotary_fraction = 1;   // of each head's dimensions, those rotated (GLM-4.5's half)
  std::string rope_scaling;     // "llama3", "yarn", ... ("": none)
  std::map<std::string, double> rope_scaling_params;  // its numbers by name (hf_config.h)
  bool qkv_bias = false;
  bool qk_norm = false;
  bool qk_norm_whole = false;  // the norm over the whole q and k projections (OLMoE), not each head
  bool head_bias = false;      // a bias on the head (Phi-3.5-MoE)
  bool shared_expert_gate = false;  // a sigmoid gate on the shared expert (Qwen2-MoE)
  bool multipliers = false;         // Granite's embedding, residual, attention and logit scalars
  std::int64_t sliding_window = 0;
  std::vector<int> window_layers;  // per layer: 1 attends within sliding_window (empty: all do)
  std::int64_t max_positions = 0;  // max_position_embeddings (0: not given)
  bool expert_bias = false;        // biases on the experts and the router (gpt-oss)
  bool router_score_correction = false;  // DeepSeek-V3's per-expert bias of the routing scores
  // Llama 4: rotary layers attending within chunks (0: none), every nope_interval-th layer
  // without rotary (nope_layers of them; interval 0 where not regular), q and k L2-normalised,
  // the gate applied to the expert's input.
  std::int64_t attention_chunk = 0;
  std::int64_t nope_layers = 0, nope_interval = 0;
  bool qk_l2_norm = false;
  bool router_probs_on_input = false;

  std::int64_t kv_channels() const { return head_dim > 0 ? head_dim : hidden / heads; }
  // Some layers attend within a window shorter than the sequence (else the window changes nothing).
  bool windowed() const { return sliding_window > 0 && sliding_window < seq; }
};

// The decoder `serial` is (its layers of causal self-attention with one MLP each, a token
// embedding and a head over the vocabulary), or nullopt with `why` saying what it lacks.
std::optional<ModelShape> model_shape_of(const Graph& serial, std::string* why = nullptr);

// Adds what only the config holds (architecture, rope, q/k/v biases, q/k norms, window).
void add_hf_details(ModelShape& shape, const hf::HfConfig& config);
// A Hugging Face config's details as a graph built from it keeps them (Graph::source_details),
// which model_shape_of reads back: what only the config says, for the launch writers.
std::string hf_source_details(const hf::HfConfig& config);

nlohmann::json model_shape_to_json(const ModelShape& shape);
// Throws InputError naming the field.
ModelShape model_shape_from_json(const nlohmann::json& j);

}  // namespace unity
