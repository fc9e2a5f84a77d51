// The parameter count of a Hugging Face config's model, module by module as its transformers
// class holds them, so that it can be checked against the count a model card publishes (and the
// graph Unity builds against it: hf_model.cpp leaves out what MultiHeadAttention cannot hold).
#include "unity/core/hf/hf_config.h"

namespace unity::hf {
namespace {

std::int64_t attention_parameters(const HfConfig& c) {
  const std::int64_t h = c.hidden;
  if (c.mla) {  // DeepSeek's latent attention: low-rank q and kv, each with a norm at its rank
    const MlaConfig& m = *c.mla;
    const std::int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
    const std::int64_t q = m.q_lora_rank > 0
                               ? h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * c.heads * qk
                               : h * c.heads * qk;
    const std::int64_t kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank +
                            m.kv_lora_rank * c.heads * (m.qk_nope_head_dim + m.v_head_dim);
    return q + kv + c.heads * m.v_head_dim * h;
  }
  const std::int64_t d = c.head_size(), q = c.heads * d, kv = c.kv_heads * d;
  std::int64_t n = h * q + 2 * h * kv + q * h;
  if (c.qkv_bias) n += q + 2 * kv;
  if (c.out_bias) n += h;
  if (c.qk_norm) n += 2 * d;
  if (c.qk_norm_whole) n += q + kv;
  if (c.attention_sinks) n += c.heads;
  return n;
}

std::int64_t mlp_parameters(std::int64_t hidden, std::int64_t ffn, bool gated, bool bias) {
  const std::int64_t weights = (gated ? 3 : 2) * hidden * ffn;
  return weights + (bias ? (gated ? 2 : 1) * ffn + hidden : 0);
}

std::int64_t moe_parameters(const HfConfig& c) {
  const MoeConfig& m = *c.moe;
  const std::int64_t expert = mlp_parameters(c.hidden, m.expert_ffn, true, m.expert_bias);
  std::int64_t n = m.experts * expert + c.hidden * m.experts;  // the experts and the router
  if (m.expert_bias) n += m.experts;
  if (m.score_correction) n += m.experts;
  if (m.shared_expert_gate) n += c.hidden;
  return n + mlp_parameters(c.hidden, m.shared_width(), true, false);
}

}  // namespace

std::int64_t parameter_count(const HfConfig& c) {
  const std::int64_t norm = c.hidden * (c.layer_norm ? 2 : 1);
  const std::int64_t dense_mlp = mlp_parameters(c.hidden, c.ffn, c.gated_mlp, c.mlp_bias);
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < c.layers; ++i) {
    n += attention_parameters(c) + (c.sandwich_norms ? 4 : c.shared_parallel_norm ? 1 : 2) * norm;
    n += c.moe && c.moe->is_moe_layer(i) ? moe_parameters(c) : dense_mlp;
  }
  n += c.vocab * c.hidden + norm;  // the token embedding and the final norm
  if (c.learned_positions) n += c.max_positions * c.hidden;
  if (!c.tied) n += c.hidden * c.vocab;  // the head
  if (c.head_bias) n += c.vocab;
  return n;
}

}  // namespace unity::hf
