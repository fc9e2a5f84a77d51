#pragma once
// A Hugging Face `config.json` (the file every open model ships beside its weights), read into the
// sizes and choices that make its decoder: what `unity optimize path/to/config.json` plans. No
// weights are read. The fields are those the transformers library's config classes define for
// each architecture (LlamaConfig, Qwen2Config, Gemma2Config, GPT2Config, GPTNeoXConfig, ...),
// with those classes' defaults where a published config leaves a field out.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace unity::hf {

// The expert layers of a mixture-of-experts architecture (Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE,
// Phi-3.5-MoE, DeepSeek-V3, gpt-oss), built as a router and an Experts operator (hf_model.cpp).
struct MoeConfig {
  std::int64_t experts = 0;            // routed experts (num_local_experts, num_experts,
                                       // n_routed_experts)
  std::int64_t experts_per_token = 0;  // num_experts_per_tok: the router's top-k
  std::int64_t shared_experts = 0;     // n_shared_experts: experts every token goes through
  // The shared experts' MLP width where the config gives it whole (Qwen2-MoE's
  // shared_expert_intermediate_size); 0: shared_experts x expert_ffn.
  std::int64_t shared_ffn = 0;
  bool shared_expert_gate = false;         // a sigmoid gate [hidden -> 1] on the shared expert
  std::int64_t expert_ffn = 0;             // each expert's width (moe_intermediate_size, else
                                           // intermediate_size)
  std::int64_t dense_layers_first = 0;     // first_k_dense_replace: leading layers with a dense MLP
  std::int64_t layer_step = 1;             // decoder_sparse_step / moe_layer_freq: every n-th layer
  bool step_from_one = true;               // Qwen counts (i + 1) % step, DeepSeek i % step
  std::vector<std::int64_t> dense_layers;  // mlp_only_layers (Qwen3-MoE)
  bool expert_bias = false;                // biases on the experts and the router (gpt-oss)
  bool score_correction = false;           // a per-expert bias of the router's scores (DeepSeek-V3)
  bool probs_on_input = false;   // the gate scales the expert's input, not its output (Llama 4)
  bool sigmoid_scores = false;   // scoring_func "sigmoid" (DeepSeek-V3); else softmax
  bool normalize_top_k = false;  // the picked weights renormalised to sum to 1
  // Node-limited routing (DeepSeek's n_group, topk_group where topk_method limits by group): a
  // token's experts from its best route_group_top_k of route_groups groups (0: no limit).
  std::int64_t route_groups = 0;
  std::int64_t route_group_top_k = 0;
  // Whether layer `i` (0-based) of `layers` has experts rather than a dense MLP.
  bool is_moe_layer(std::int64_t i) const;
  // The width of the one MLP the shared experts make together; 0 without them.
  std::int64_t shared_width() const {
    return shared_ffn > 0 ? shared_ffn : shared_experts * expert_ffn;
  }
};

// DeepSeek's multi-head latent attention: queries and keys/values through low-rank projections.
struct MlaConfig {
  std::int64_t q_lora_rank = 0;  // 0: queries projected directly
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
};

struct HfConfig {
  std::string architecture;  // the supported entry of "architectures", e.g. "LlamaForCausalLM"
  std::string model_type;    // "llama", "gpt2", ...
  std::string name;          // the folder holding config.json (e.g. "Llama-3.1-8B")
  std::int64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  std::int64_t max_positions = 0;  // max_position_embeddings / n_positions; 0: not given
  bool tied = false;               // tie_word_embeddings: the head reads the token table
  // The families' choices.
  bool qkv_bias = false;              // biases on the q, k and v projections (Qwen2, GPT-2, NeoX)
  bool out_bias = false;              // a bias on the attention's output projection
  bool mlp_bias = false;              // biases on the MLP's linear layers
  bool qk_norm = false;               // RMSNorm over each head's q and k (Qwen3, Gemma 3)
  bool qk_norm_whole = false;         // RMSNorm over the whole q and k projections (OLMoE)
  bool layer_norm = false;            // LayerNorm with a bias (GPT-2, NeoX); else RMSNorm
  bool gated_mlp = true;              // down(act(gate(h)) * up(h)); false: a plain two-layer MLP
  std::string activation = "silu";    // hidden_act / hidden_activation / activation_function
  bool parallel_residual = false;     // use_parallel_residual (GPT-NeoX)
  bool shared_parallel_norm = false;  // the parallel branches read one norm (Phi)
  bool sandwich_norms = false;        // norms after the attention and the MLP too (Gemma 2, 3)
  bool post_norms = false;            // norms after the attention and the MLP only (OLMo 2)
  bool learned_positions = false;     // a position table (GPT-2) instead of rotary embeddings
  bool head_bias = false;             // a bias on the LM head (Phi-3.5-MoE's lm_head_bias)
  // Scalars on the embedding, the residual branches, the attention's scores and the logits other
  // than 1 (Granite's embedding_multiplier, residual_multiplier, attention_multiplier,
  // logits_scaling): element-wise, left out of the graph, kept for the launch.
  bool multipliers = false;
  bool attention_sinks = false;  // a learned logit per head (gpt-oss)
  double rope_theta = 0;         // rope_theta / rotary_emb_base; 0: none
  double rotary_fraction = 1;    // rotary_pct / partial_rotary_factor: share of a head rotated
  std::string rope_scaling;      // rope_scaling's rope_type ("llama3", "yarn", ...); "": none
  // rope_scaling's numbers by name (YaRN's factor, original_max_position_embeddings, beta_fast,
  // beta_slow, mscale, mscale_all_dim; Llama 3's factor and frequency factors), as given.
  std::map<std::string, double> rope_scaling_params;
  std::int64_t sliding_window = 0;  // the window of the layers that use one; 0: none
  std::int64_t sliding_layers = 0;  // how many layers attend within the window
  std::vector<bool> sliding;        // per layer: whether it attends within the window
  // Llama 4: its rotary layers attend within chunks of attention_chunk_size tokens (0: none), and
  // every no_rope_layer_interval-th layer has no rotary embedding (nope_layers of them), its q and
  // k normalised by an L2 norm without weights (qk_l2_norm).
  std::int64_t attention_chunk = 0;
  std::int64_t nope_layers = 0;
  std::int64_t nope_interval = 0;  // every nope_interval-th layer (0: none, or not regular)
  bool qk_l2_norm = false;
  std::string dtype;  // torch_dtype (or dtype): "bfloat16", "float16", "float32"
  std::optional<MoeConfig> moe;
  std::optional<MlaConfig> mla;
  std::int64_t head_size() const { return head_dim > 0 ? head_dim : hidden / heads; }
};

// The architectures this reader knows (dense first, then mixture-of-experts), for messages, and
// those of them Unity builds (all of them, DeepSeek-V2 and V3 with LatentAttention).
const std::vector<std::string>& supported_architectures();
const std::vector<std::string>& built_architectures();

// Reads a config.json (or the config.json of a folder). Throws InputError naming the file and the
// field for malformed JSON, an architecture it does not know (listing those it does), a missing
// field without a default, a size that is not a positive whole number, and sizes that contradict
// each other (heads not dividing hidden without head_dim, KV heads not dividing heads, ...).
HfConfig read_hf_config(const std::filesystem::path& path);
// The same from parsed JSON; `source` names it in messages, `name` becomes HfConfig::name.
HfConfig parse_hf_config(const nlohmann::json& config, const std::string& source,
                         const std::string& name = {});

// The parameters of the model the config describes, counted as its transformers class holds them
// (what model cards publish): embeddings, every projection, bias and norm, experts and routers.
// DeepSeek-V3's multi-token-prediction layers (num_nextn_predict_layers) are not counted, as in
// its published 671B.
std::int64_t parameter_count(const HfConfig& config);

}  // namespace unity::hf
