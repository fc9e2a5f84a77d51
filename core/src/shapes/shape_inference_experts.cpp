// Experts: x [b..., H], gates [b..., E], w1 [E, H, F], w2 [E, F, H], w3 [E, H, F] (SwiGLU only).
// Three ways to split it, which compose:
// - tokens: the leading dims b... split alike on x, the gates and the output; every weight is
//   copied once per token block (data parallelism);
// - experts: the gates' E dim and every weight's dim 0 by one degree; each block runs its
//   experts on every token (x copied per block) and leaves a partial sum of the output (expert
//   parallelism: what the all-to-all dispatch and combine move);
// - the FFN width F: w1 and w3 dim 2 and w2 dim 1 by one degree; x and the gates copied per
//   block, partial sums out (the experts' own tensor parallelism).
// H is never split. The output's replica is experts degree x FFN degree. A router's group limit
// (route_groups, route_group_top_k; token_dispatch.h's ExpertRouting) must leave top_k experts to
// pick from.
#include "shape_rules.h"

namespace unity::shape_rules {

Shapes infer_experts(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  const auto& g = in[1];
  const std::string act = op.attrs.get_string("mlp", "swiglu");
  const bool gated = act == "swiglu";
  if (!gated && act != "gelu")
    fail("attribute 'mlp' must be \"swiglu\" or \"gelu\", got \"{}\"", act);
  const std::size_t weights = gated ? 3 : 2;
  if (in.size() != 2 + weights)
    fail("mlp \"{}\" takes x, gates and {} weights, got {} inputs", act, weights, in.size());
  expect_min_rank(x, 2, "input 0 (x)");
  expect_floating(x, "input 0 (x)");
  expect_floating(g, "input 1 (gates)");
  const int r = x.rank();
  expect_rank(g, r, "input 1 (gates)");
  const std::int64_t hidden = x.dims[r - 1].size;
  const std::int64_t experts = g.dims[r - 1].size;
  for (int i = 0; i < r - 1; ++i)
    if (g.dims[i] != x.dims[i])
      fail("input 1 (gates) {} does not match input 0 (x) {} in dim {}", g.to_string(),
           x.to_string(), i);
  const char* names[] = {"input 2 (w1 [E, H, F])", "input 3 (w2 [E, F, H])",
                         "input 4 (w3 [E, H, F])"};
  for (std::size_t i = 0; i < weights; ++i) expect_rank(in[2 + i], 3, names[i]);
  const auto& w1 = in[2];
  const auto& w2 = in[3];
  const std::int64_t ffn = w1.dims[2].size;
  expect_size(w1, 0, experts, names[0]);
  expect_size(w1, 1, hidden, names[0]);
  expect_size(w2, 0, experts, names[1]);
  expect_size(w2, 1, ffn, names[1]);
  expect_size(w2, 2, hidden, names[1]);
  if (gated) {
    expect_size(in[4], 0, experts, names[2]);
    expect_size(in[4], 1, hidden, names[2]);
    expect_size(in[4], 2, ffn, names[2]);
  }
  const std::int64_t top_k = op.attrs.get_int("top_k");
  expect_positive(top_k, "top_k");
  // The planner's expert-parallel share of a task (task_work.cpp); 1 everywhere else.
  expect_positive(op.attrs.get_int("expert_parallel", 1), "expert_parallel");
  // And its load: the busiest device's tokens over an even share (expert_load.h).
  if (op.attrs.get_double("expert_load", 1.0) <= 0)
    fail("expert_load must be positive, got {}", op.attrs.get_double("expert_load", 1.0));
  if (top_k > experts) fail("top_k {} is more than the {} experts", top_k, experts);
  if (const std::int64_t groups = op.attrs.get_int("route_groups", 0); groups > 1) {
    const std::int64_t kept = op.attrs.get_int("route_group_top_k", 0);
    if (experts % groups != 0)
      fail("route_groups {} does not divide the {} experts", groups, experts);
    if (kept < 1 || kept >= groups)
      fail("route_group_top_k must be 1 to route_groups - 1 ({}), got {}", groups - 1, kept);
    if (top_k > kept * (experts / groups))
      fail("top_k {} is more than the {} experts of {} groups", top_k, kept * (experts / groups),
           kept);
  }

  const int d_tokens = degree_product(x, 0, r - 1);
  const int d_experts = g.dims[r - 1].degree;
  const int d_ffn = w1.dims[2].degree;
  expect_degree(x, r - 1, 1, "input 0 (x)", "every expert reads the whole hidden state");
  expect_replica(x, d_experts * d_ffn, "input 0 (x)",
                 "each block of experts and of the FFN width reads every token");
  expect_replica(g, d_ffn, "input 1 (gates)", "each block of the FFN width reads the gates");
  const int w_dims_ffn[] = {2, 1, 2};
  for (std::size_t i = 0; i < weights; ++i) {
    const auto& w = in[2 + i];
    expect_degree(w, 0, d_experts, names[i], "experts split like the gates' last dim");
    for (int dim = 1; dim < 3; ++dim)
      expect_degree(w, dim, dim == w_dims_ffn[i] ? d_ffn : 1, names[i],
                    dim == w_dims_ffn[i] ? "the FFN width splits alike on every weight"
                                         : "the hidden size is never split");
    expect_replica(w, d_tokens, names[i], "each token block needs its own copy of the experts");
  }
  ParallelTensorShape y = x;
  y.replica = d_experts * d_ffn;
  return {y};
}

}  // namespace unity::shape_rules
