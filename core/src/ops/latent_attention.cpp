// LatentAttention: DeepSeek-V2/V3's multi-head latent attention (MLA) as one operator: the query
// and key/value down projections into compressed latents, their RMSNorms, the up projections into
// heads, decoupled rotary embeddings (a rotary query part per head, one rotary key shared by the
// heads), the attention and the output projection. Its arithmetic is
// unity/core/ops/latent_attention.h; here are its definition, shape inference and work.
//
// Inputs: x [b, s, E], w_dq [E, q_lora], q_norm [q_lora], w_uq [q_lora, heads x (nope + rope)],
// w_dkv [E, kv_lora + rope], kv_norm [kv_lora], w_ukv [kv_lora, heads x (nope + v)],
// w_o [heads x v, E]; without query compression (q_lora_rank 0, DeepSeek-V2-Lite) there is no
// w_dq and no q_norm and w_uq is [E, heads x (nope + rope)]. Attributes: num_heads,
// qk_nope_head_dim, qk_rope_head_dim, v_head_dim; optional q_lora_rank and kv_lora_rank (checked
// against the weights), causal, fused (one FlashAttention kernel) and rotary_base (10000).
//
// Parallel along the samples (dim 0 of x, every weight copied) and along the heads (the up
// projections' columns and w_o's rows split alike, the down projections and norms copied to
// every head block, which runs them whole; the output is then partial sums): Megatron-Core's MLA
// tensor parallelism. The sequence and the hidden size are never split.
#include <algorithm>
#include <cmath>

#include "shapes/shape_rules.h"
#include "unity/core/cost/cost_model.h"
#include "unity/core/ops/latent_attention.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/pcg/graph.h"

namespace unity {
namespace {

using namespace shape_rules;
namespace la = latent_attention;

std::vector<ParallelTensorShape> infer(const Operator& op,
                                       const std::vector<ParallelTensorShape>& in) {
  const std::int64_t heads = op.attrs.get_int("num_heads");
  const std::int64_t nope = op.attrs.get_int("qk_nope_head_dim");
  const std::int64_t rope = op.attrs.get_int("qk_rope_head_dim");
  const std::int64_t v = op.attrs.get_int("v_head_dim");
  expect_positive(heads, "num_heads");
  expect_positive(nope, "qk_nope_head_dim");
  expect_positive(rope, "qk_rope_head_dim");
  expect_positive(v, "v_head_dim");
  if (rope % 2 != 0) fail("rotary embeddings rotate pairs: qk_rope_head_dim {} must be even", rope);
  for (const char* flag : {"causal", "fused"}) {
    const std::int64_t f = op.attrs.get_int(flag, 0);
    if (f != 0 && f != 1) fail("attribute '{}' must be 0 or 1, got {}", flag, f);
  }
  if (in.size() != 6 && in.size() != 8)
    fail("takes x and 7 weights (or 5 without query compression), got {} inputs", in.size());
  auto at = [&](int slot) -> const ParallelTensorShape& {
    return in[static_cast<std::size_t>(la::input_of(slot, in.size()))];
  };
  const bool compressed = in.size() == 8;
  const char* names[] = {
      "input x [b, s, E]",
      "w_dq [E, q_lora]",
      "q_norm [q_lora]",
      compressed ? "w_uq [q_lora, heads x (nope + rope)]" : "w_uq [E, heads x (nope + rope)]",
      "w_dkv [E, kv_lora + rope]",
      "kv_norm [kv_lora]",
      "w_ukv [kv_lora, heads x (nope + v)]",
      "w_o [heads x v, E]"};
  const auto& x = at(la::kX);
  expect_rank(x, 3, names[la::kX]);
  expect_floating(x, names[la::kX]);
  const std::int64_t e = x.dims[2].size;
  const std::int64_t kv_lora = at(la::kKvNorm).dims.at(0).size;
  std::int64_t q_lora = 0;
  for (int s = la::kWdq; s < la::kSlots; ++s) {
    if (la::input_of(s, in.size()) < 0) continue;
    expect_rank(at(s), s == la::kQnorm || s == la::kKvNorm ? 1 : 2, names[s]);
  }
  if (compressed) {
    q_lora = at(la::kQnorm).dims[0].size;
    expect_size(at(la::kWdq), 0, e, names[la::kWdq]);
    expect_size(at(la::kWdq), 1, q_lora, names[la::kWdq]);
  }
  if (op.attrs.get_int("q_lora_rank", q_lora) != q_lora)
    fail("q_lora_rank {} does not match the weights' {}", op.attrs.get_int("q_lora_rank"), q_lora);
  if (op.attrs.get_int("kv_lora_rank", kv_lora) != kv_lora)
    fail("kv_lora_rank {} does not match kv_norm's {}", op.attrs.get_int("kv_lora_rank"), kv_lora);
  expect_size(at(la::kWuq), 0, compressed ? q_lora : e, names[la::kWuq]);
  expect_size(at(la::kWuq), 1, heads * (nope + rope), names[la::kWuq]);
  expect_size(at(la::kWdkv), 0, e, names[la::kWdkv]);
  expect_size(at(la::kWdkv), 1, kv_lora + rope, names[la::kWdkv]);
  expect_size(at(la::kWukv), 0, kv_lora, names[la::kWukv]);
  expect_size(at(la::kWukv), 1, heads * (nope + v), names[la::kWukv]);
  expect_size(at(la::kWo), 0, heads * v, names[la::kWo]);
  expect_size(at(la::kWo), 1, e, names[la::kWo]);

  const int d_n = x.dims[0].degree;
  const int d_heads = at(la::kWuq).dims[1].degree;
  if (heads % d_heads != 0) fail("head degree {} does not divide num_heads {}", d_heads, heads);
  expect_degree(x, 1, 1, names[la::kX], "attention reads the whole sequence");
  expect_degree(x, 2, 1, names[la::kX], "the projections read the whole hidden state");
  expect_replica(x, d_heads, names[la::kX], "each head block reads the whole input");
  for (int s = la::kWdq; s < la::kSlots; ++s) {
    if (la::input_of(s, in.size()) < 0) continue;
    const auto& w = at(s);
    const bool split = s == la::kWuq || s == la::kWukv || s == la::kWo;
    for (int dim = 0; dim < w.rank(); ++dim) {
      const bool head_dim = split && dim == (s == la::kWo ? 0 : 1);
      expect_degree(w, dim, head_dim ? d_heads : 1, names[s],
                    head_dim ? "the up projections and w_o split by heads alike"
                             : "only the heads split a weight");
    }
    expect_replica(w, split ? d_n : d_n * d_heads, names[s],
                   split ? "one copy per sample block"
                         : "the down projections and norms run whole in every sample and head "
                           "block");
  }
  ParallelTensorShape y = x;
  y.replica = d_heads;
  return {y};
}

// One task: its samples and heads. Every projection's GEMM, the two products of the attention
// (the scores over nope + rope, the context over v), RMSNorm and the rotations; fused, fp8 and
// unfused as MultiHeadAttention's (task_work.cpp).
void work(const Graph& g, const Node& n, bool fused_kernels, TaskWork& w) {
  auto shape = [&](int slot) -> const ParallelTensorShape& {
    return g.shape(n.inputs.at(static_cast<std::size_t>(la::input_of(slot, n.inputs.size()))));
  };
  const auto& x = shape(la::kX);
  const double b = static_cast<double>(x.dims[0].size / x.dims[0].degree);
  const double s = static_cast<double>(x.dims[1].size);
  const double e = static_cast<double>(x.dims[2].size);
  const double tokens = b * s;
  const auto& wuq = shape(la::kWuq);
  const int d_heads = wuq.dims[1].degree;
  const double heads = static_cast<double>(n.op.attrs.get_int("num_heads")) / d_heads;
  const double nope = static_cast<double>(n.op.attrs.get_int("qk_nope_head_dim"));
  const double rope = static_cast<double>(n.op.attrs.get_int("qk_rope_head_dim"));
  const double v = static_cast<double>(n.op.attrs.get_int("v_head_dim"));
  const bool compressed = n.inputs.size() == 8;
  const double q_lora = compressed ? static_cast<double>(shape(la::kQnorm).dims[0].size) : 0;
  const double kv_lora = static_cast<double>(shape(la::kKvNorm).dims[0].size);
  const double q_in = compressed ? q_lora : e;
  double projections = 0;
  auto gemm = [&](double rows, double k, double cols) {
    const double f = 2.0 * rows * k * cols;
    w.add_gemm(rows, cols, 1, f);
    projections += f;
  };
  if (compressed) gemm(tokens, e, q_lora);
  gemm(tokens, q_in, heads * (nope + rope));
  gemm(tokens, e, kv_lora + rope);
  gemm(tokens, kv_lora, heads * (nope + v));
  gemm(tokens, heads * v, e);
  // RMSNorm (square, sum, scale, gamma) on the latents, the rotations (x cos + x' sin) of each
  // head's rope part and of the shared key.
  const double other = 4.0 * tokens * (q_lora + kv_lora) + 3.0 * tokens * rope * (heads + 1);
  // Against the keys of every context-parallel shard (the planner's "context_parallel").
  const double keys = s * static_cast<double>(n.op.attrs.get_int("context_parallel", 1));
  const double qk_products = 2.0 * b * heads * s * keys * (nope + rope);
  const double pv_products = 2.0 * b * heads * s * keys * v;
  const double attention = qk_products + pv_products;
  if (has_fp8_gemms(n)) {
    // The projections in fp8: x (cast once for both down projections), the latents and the
    // context cast; the scores stay bf16.
    w.fp8_flops = projections;
    for (int i = 0; i < w.gemm_count; ++i) w.gemms[static_cast<std::size_t>(i)].fp8 = true;
    w.fp8_cast_bytes = 4.0 * tokens * (e + q_lora + kv_lora + heads * v);
  }
  if (fused_kernels && n.op.attrs.get_int("fused", 0) != 0) {
    // One FlashAttention kernel: a causal mask skips half the products, the backward recomputes
    // the scores (five products against the forward's two).
    const double run = n.op.attrs.get_int("causal", 0) != 0 ? attention / 2 : attention;
    w.set_attention(projections + other, attention, run, true);
    return;
  }
  // Unfused: the whole score matrix [b, heads, s, s], written, through the softmax, read.
  w.set_attention(projections + other, attention, attention, false);
  w.transcendentals = b * heads * s * keys;
  w.add_gemm(s, keys, b * heads, qk_products);
  w.add_gemm(s, v, b * heads, pv_products);
  w.serial_bytes = 4.0 * b * heads * s * keys * static_cast<double>(size_of(x.dtype));
}

}  // namespace

template <>
const OperatorDefinition& define_operator<OpType::LatentAttention>() {
  static const OperatorDefinition d{
      {OpType::LatentAttention, "LatentAttention", OpCategory::Compute, 6, 8},
      {},
      {},
      "multi-head latent attention (DeepSeek-V2/V3): queries and keys/values through compressed "
      "latents, decoupled rotary embeddings, split by heads",
      {},
      &infer,
      &work};
  return d;
}

}  // namespace unity
