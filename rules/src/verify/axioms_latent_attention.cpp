// LatentAttention's part of the theory (operator_theory: asserted only in proofs of rules that
// name it). x [b, s, E] and the weights w_dq, q_norm, w_uq, w_dkv, kv_norm, w_ukv, w_o (without
// query compression: w_uq, w_dkv, kv_norm, w_ukv, w_o): the samples (x's dim 0) split with every
// weight copied; the heads (w_uq's and w_ukv's dim 1, w_o's dim 0) split with x, the down
// projections and the norms copied leave partial sums that add up to the whole (each block's heads
// contribute their own terms of the output projection's sum); and the fused kernel computes what
// the unfused one does.
#include <functional>

#include "theory.h"

namespace unity::rules::spec {

void add_latent_attention_theory(Theory& th) {
  using M = Axiom::Mode;
  const E x = tvar("x"), k = ivar("k"), d = ivar("d");
  auto is_dim = [](const E& kk, const E& t, const E& at) { return norm(kk, rank(t)) == at; };
  for (int arity : {8, 6}) {
    // The weights in input order, and which of them the heads split (at which dim: -1 none).
    const std::vector<std::string> names =
        arity == 8 ? std::vector<std::string>{"wdq", "qn", "wuq", "wdkv", "kvn", "wukv", "wo"}
                   : std::vector<std::string>{"wuq", "wdkv", "kvn", "wukv", "wo"};
    std::vector<E> w;
    std::vector<int> head_dim;
    for (const auto& n : names) {
      w.push_back(tvar(n));
      head_dim.push_back(n == "wuq" || n == "wukv" ? 1 : n == "wo" ? 0 : -1);
    }
    std::map<std::string, E> attrs;
    auto la = [&](const E& xx, const std::vector<E>& ws) {
      std::vector<E> args{xx};
      args.insert(args.end(), ws.begin(), ws.end());
      return with_attr_vars(OpType::LatentAttention, args, "a_", attrs);
    };
    auto each = [&](const std::function<E(const E&, std::size_t)>& f) {
      std::vector<E> out;
      for (std::size_t i = 0; i < w.size(); ++i) out.push_back(f(w[i], i));
      return out;
    };
    const E a = la(x, w);
    const std::string t = "LatentAttention" + std::to_string(arity);
    th.facts.push_back({t + "_shape", a,
                        !ok(a) || (rank(x) == 3 && rank(a) == 3 && degree(a, 0) == degree(x, 0)),
                        E()});
    const std::string n = arity == 8 ? "latent_attention" : "latent_attention_direct_q";
    auto add = [&](const std::string& name, M mode, const E& lhs, const E& rhs, const E& guard) {
      th.axioms.push_back({name, mode, lhs, rhs, guard, E()});
    };
    const auto copied = each([&](const E& wi, std::size_t) { return R(d, wi); });
    add(n + "_sample_partition", M::Both, la(P(k, d, x), copied), P(k, d, a), is_dim(k, x, 0));
    add(n + "_sample_combine", M::Both, la(C(k, d, x), w), C(k, d, la(x, copied)), is_dim(k, x, 0));
    // One dim variable per split weight, each guarded to the dim it must name.
    E guard = blit(true);
    const auto heads = each([&](const E& wi, std::size_t i) {
      if (head_dim[i] < 0) return R(d, wi);
      const E ki = ivar("k" + std::to_string(i));
      guard = guard && is_dim(ki, wi, head_dim[i]);
      return P(ki, d, wi);
    });
    add(n + "_head_reduction", M::Forward, Red(d, la(R(d, x), heads)), a, guard);
    // A fused kernel (the scores never leave the chip) computes the same function.
    auto with_kernel = [&](int fused) {
      auto at = attrs;
      at["fused"] = ilit(fused);
      std::vector<E> args{x};
      args.insert(args.end(), w.begin(), w.end());
      return app(OpType::LatentAttention, at, args);
    };
    add(n + "_fused_kernel", M::Forward, with_kernel(1), with_kernel(0), E());
  }
}

}  // namespace unity::rules::spec
