// The attention operators' shared view (unity/core/ops/attention_core.h): MultiHeadAttention's
// heads over w_q's width, LatentAttention's over its up projections.
#include "unity/core/ops/attention_core.h"

#include <algorithm>

#include "unity/core/ops/latent_attention.h"

namespace unity {

bool has_attention(const Graph& g) {
  return std::any_of(g.nodes().begin(), g.nodes().end(),
                     [](const auto& entry) { return is_attention(entry.second.op.type); });
}

AttentionTask attention_task(const Graph& g, const Node& n) {
  AttentionTask a;
  const auto& x = g.shape(n.inputs.at(0));
  a.batch = static_cast<double>(x.dims[0].size / x.dims[0].degree);
  a.sq = static_cast<double>(x.dims[1].size);
  const double e = static_cast<double>(x.dims[2].size);
  const double heads = static_cast<double>(n.op.attrs.get_int("num_heads"));
  a.context_parallel = static_cast<double>(n.op.attrs.get_int("context_parallel", 1));
  if (n.op.type == OpType::MultiHeadAttention) {
    // q [b, sq, E], k and v [b, sk, E]; w_q [E, heads x D], w_k [E, kv heads x D].
    a.sk = static_cast<double>(g.shape(n.inputs.at(1)).dims[1].size);
    const auto& wq = g.shape(n.inputs.at(3));
    const auto& wk = g.shape(n.inputs.at(4));
    const int d = wq.dims[1].degree;
    const double q_width = static_cast<double>(wq.dims[1].size) / d;
    const double kv_width = static_cast<double>(wk.dims[1].size) / d;
    a.heads = heads / d;
    a.qk_dim = a.v_dim = static_cast<double>(wq.dims[1].size) / heads;
    a.projection_flops =
        2.0 * a.batch * (a.sq * e * q_width + 2 * a.sk * e * kv_width + a.sq * q_width * e);
    a.kept_elements = 2.0 * a.batch * a.sq * q_width + 2.0 * a.batch * a.sk * kv_width;
    a.kv_elements = 2.0 * a.batch * a.sk * kv_width;
    return a;
  }
  // LatentAttention: self-attention, its widths from the attributes and the latents' norms.
  namespace la = latent_attention;
  auto shape = [&](int slot) -> const ParallelTensorShape& {
    return g.shape(n.inputs.at(static_cast<std::size_t>(la::input_of(slot, n.inputs.size()))));
  };
  a.sk = a.sq;
  a.heads = heads / shape(la::kWuq).dims[1].degree;
  const double nope = static_cast<double>(n.op.attrs.get_int("qk_nope_head_dim"));
  const double rope = static_cast<double>(n.op.attrs.get_int("qk_rope_head_dim"));
  a.qk_dim = nope + rope;
  a.v_dim = static_cast<double>(n.op.attrs.get_int("v_head_dim"));
  const bool compressed = n.inputs.size() == 8;
  const double q_lora = compressed ? static_cast<double>(shape(la::kQnorm).dims[0].size) : 0;
  const double kv_lora = static_cast<double>(shape(la::kKvNorm).dims[0].size);
  const double tokens = a.batch * a.sq;
  a.projection_flops =
      2.0 * tokens *
      (e * q_lora + (compressed ? q_lora : e) * a.heads * a.qk_dim + e * (kv_lora + rope) +
       kv_lora * a.heads * (nope + a.v_dim) + a.heads * a.v_dim * e);
  // The latents before and after their norms, the shared rotary key, and per head q, k, v and
  // the context (what Megatron-Core's MLA keeps).
  a.kept_elements =
      tokens * (2.0 * q_lora + 2.0 * kv_lora + rope + a.heads * (2.0 * a.qk_dim + 2.0 * a.v_dim));
  a.kv_elements = tokens * a.heads * (a.qk_dim + a.v_dim);
  return a;
}

}  // namespace unity
