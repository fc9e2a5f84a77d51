// A Hugging Face config's decoder through the zoo's builders: GPT-2 through the gpt family's
// (learned positions, LayerNorm, a GELU MLP with biases, tied), the others through the llama
// family's with the variations their modeling code has (GPT-NeoX's LayerNorm, plain MLP and
// parallel residual; Gemma's GeGLU and the norms after the attention and the MLP).
//
// What MultiHeadAttention cannot hold is left out and counted apart (hf::parameter_count has it):
// the biases of the q, k and v projections (Qwen2, GPT-2, GPT-NeoX: 0.002% to 0.03% of their
// parameters), the q/k norms (Qwen3, Gemma 3) and partial rotary embeddings (the rotation is a
// small element-wise cost). Sliding-window attention is held: the layers that use it attend with a
// window (MultiHeadAttention's "window").
// Gemma's scaled embedding and logit soft-capping are element-wise and left out (as are Granite's
// multipliers of the embedding, the residual branches, the scores and the logits), and so are
// OLMoE's q/k norms over the whole projections and Phi-3.5-MoE's bias on the head (its logits'
// one add). Of the mixture-of-experts layers, gpt-oss's expert and router biases (0.03% of its
// parameters), DeepSeek's router score correction and Qwen2-MoE's sigmoid gate on its shared
// expert (a [hidden -> 1] product and a scale, 0.0002% of the parameters) are not held by the
// Experts operator either. DeepSeek-V2 and
// V3 attend through LatentAttention (multi-head latent attention), its YaRN scaling of the
// rotation and of the softmax left out (it changes no shape and no work); their routed scaling
// factor changes the gates' scale (their node-limited routing is held on the Experts operators),
// not the work, and is left out too.
#include "unity/core/hf/hf_model.h"

#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/pcg/data_type.h"
#include "zoo/zoo_models.h"

namespace unity::hf {
namespace {

// The family size flags a config takes (--seq, --layers) and those it refuses, naming the field
// to change instead.
void refuse_resizes(const HfConfig& c, const zoo::TransformerResize& r) {
  for (auto [value, flag, field] : {std::tuple{r.hidden, "--hidden", "hidden_size"},
                                    {r.heads, "--heads", "num_attention_heads"},
                                    {r.vocab, "--vocab", "vocab_size"},
                                    {r.ffn, "--ffn", "intermediate_size"},
                                    {r.kv_heads, "--kv-heads", "num_key_value_heads"},
                                    {r.head_dim, "--head-dim", "head_dim"}})
    if (value)
      throw InputError(
          fmt::format("{} resizes a zoo model; '{}' is a Hugging Face config: change "
                      "its {} instead (--seq and --layers apply to a config)",
                      flag, c.name, field));
  if (r.tie_embeddings)
    throw InputError(
        fmt::format("--tie-embeddings ties a zoo model's head; '{}' is a Hugging Face "
                    "config: set its tie_word_embeddings instead",
                    c.name));
}

bool gelu_activation(const HfConfig& c) {
  if (c.activation == "silu" || c.activation == "swish") return false;
  if (c.activation.rfind("gelu", 0) == 0) return true;  // gelu, gelu_new, gelu_pytorch_tanh
  throw InputError(
      fmt::format("'{}': {} activation '{}' is not one Unity builds (silu, gelu and "
                  "its tanh forms)",
                  c.name, c.architecture, c.activation));
}

DataType config_dtype(const HfConfig& c) {
  if (c.dtype == "float32") return DataType::Float32;
  if (c.dtype == "float16") return DataType::Float16;
  return DataType::BFloat16;  // as named, or what a config without one trains in today
}

}  // namespace

Graph build_hf_model(const HfConfig& c, std::int64_t batch, const zoo::TransformerResize& r) {
  refuse_resizes(c, r);
  const std::int64_t seq = r.seq > 0 ? r.seq : c.max_positions;
  if (seq <= 0)
    throw InputError(
        fmt::format("'{}' gives no max_position_embeddings: say the sequence length "
                    "with --seq",
                    c.name));
  if (c.learned_positions && seq > c.max_positions)
    throw InputError(fmt::format("--seq {}: '{}' has learned positions for {} tokens (n_positions)",
                                 seq, c.name, c.max_positions));
  zoo::TransformerSizes z{
      r.layers > 0 ? r.layers : c.layers, c.hidden, c.heads, c.kv_heads, c.ffn, seq, c.vocab};
  z.head_dim = c.head_dim;
  z.tied = c.tied;
  z.positions = c.learned_positions ? c.max_positions : 0;
  z.attention_bias = c.out_bias;
  z.layer_norm = c.layer_norm;
  z.gated_mlp = c.gated_mlp;
  z.gelu = gelu_activation(c);
  z.mlp_bias = c.mlp_bias;
  z.parallel_residual = c.parallel_residual;
  z.shared_parallel_norm = c.shared_parallel_norm;
  z.sandwich_norms = c.sandwich_norms;
  z.post_norms = c.post_norms;
  if (c.mla) {  // DeepSeek-V2/V3: LatentAttention
    z.q_lora = c.mla->q_lora_rank;
    z.kv_lora = c.mla->kv_lora_rank;
    z.qk_nope = c.mla->qk_nope_head_dim;
    z.qk_rope = c.mla->qk_rope_head_dim;
    z.v_head_dim = c.mla->v_head_dim;
  }
  z.window = c.sliding_window;
  z.windowed = c.sliding;
  if (c.moe) {
    const MoeConfig& m = *c.moe;
    z.experts = m.experts;
    z.experts_per_token = m.experts_per_token;
    z.expert_ffn = m.expert_ffn;
    z.shared_experts = m.shared_experts;
    z.shared_ffn = m.shared_ffn;
    z.dense_layers_first = m.dense_layers_first;
    z.moe_layer_step = m.layer_step;
    z.step_from_one = m.step_from_one;
    z.dense_layers = m.dense_layers;
    z.router_sigmoid = m.sigmoid_scores;
    z.normalize_top_k = m.normalize_top_k;
    z.route_groups = m.route_groups;
    z.route_group_top_k = m.route_group_top_k;
  }

  std::vector<std::string> changed;
  if (r.seq > 0) changed.push_back(fmt::format("seq={}", r.seq));
  if (r.layers > 0) changed.push_back(fmt::format("layers={}", r.layers));
  Graph graph;
  graph.name = changed.empty() ? c.name : fmt::format("{}[{}]", c.name, fmt::join(changed, ","));
  graph.batch_size = batch;
  GraphBuilder builder(graph);
  if (c.learned_positions)
    zoo::detail::build_gpt(builder, batch, z);
  else
    zoo::detail::build_llama(builder, batch, z, DataType::Float32);
  set_compute_dtype(graph, config_dtype(c));
  return graph;
}

}  // namespace unity::hf
