// ConvTranspose's part of the theory (operator_theory: asserted only in proofs of rules that name
// it, so that every other proof's Z3 context stays what it was). x [N, C, spatial...] (1 to 3
// spatial dims), w [C, O/groups, k...], bias [O]: samples split; output channels are w's dim 1 (x
// replicated); input channels are x's dim 1 and w's dim 0 (partial sums); spatial dims whole.
#include "theory.h"

namespace unity::rules::spec {

void add_conv_transpose_theory(Theory& th) {
  using M = Axiom::Mode;
  const E x = tvar("x"), w = tvar("w"), b = tvar("b");
  const E k = ivar("k"), d = ivar("d"), i = ivar("i"), kw = ivar("kw"), kb = ivar("kb");
  auto is_dim = [](const E& kk, const E& t, const E& at) { return norm(kk, rank(t)) == at; };
  for (int arity : {2, 3}) {
    std::map<std::string, E> attrs;
    auto ct = [&](const E& xx, const E& ww, const E& bb) {
      return with_attr_vars(OpType::ConvTranspose,
                            arity == 2 ? std::vector<E>{xx, ww} : std::vector<E>{xx, ww, bb}, "a_",
                            attrs);
    };
    const E a = ct(x, w, b);
    const E dense = attrs.at("groups") == 1;
    // Typing: ranks, degrees of samples and output channels, the partial sums of input channels.
    E holds = ilit(3) <= rank(x) && rank(x) <= 5 && rank(w) == rank(x) && rank(a) == rank(x) &&
              degree(a, 0) == degree(x, 0) &&
              (!dense || (degree(w, 0) == degree(x, 1) && replica(a) == degree(x, 1) &&
                          replica(x) == degree(w, 1) && degree(a, 1) == degree(w, 1)));
    if (arity == 3) holds = holds && rank(b) == 1 && degree(b, 0) == degree(a, 1);
    const std::string t = "ConvTranspose" + std::to_string(arity);
    th.facts.push_back({t + "_shape", a, !ok(a) || holds, E()});
    th.facts.push_back(
        {t + "_spatial_degrees", degree(a, i),
         !(ok(a) && ilit(2) <= i && i < rank(a)) || (degree(a, i) == 1 && degree(x, i) == 1), E()});

    const std::string n = arity == 2 ? "conv_transpose" : "conv_transpose_bias";
    const E bias_dim = arity == 3 ? is_dim(kb, b, 0) : blit(true);
    auto bias = [&](const E& e) { return arity == 3 ? e : b; };
    const E sample = is_dim(k, x, 0);
    auto add = [&](const std::string& name, M mode, const E& lhs, const E& rhs, const E& guard) {
      th.axioms.push_back({name, mode, lhs, rhs, guard, E()});
    };
    add(n + "_sample_partition", M::Both, ct(P(k, d, x), R(d, w), R(d, b)), P(k, d, ct(x, w, b)),
        sample);
    add(n + "_sample_combine", M::Both, ct(C(k, d, x), w, b), C(k, d, ct(x, R(d, w), R(d, b))),
        sample);
    add(n + "_output_partition", M::Forward, ct(R(d, x), P(kw, d, w), bias(P(kb, d, b))),
        P(1, d, ct(x, w, b)), dense && is_dim(kw, w, 1) && bias_dim);
    add(n + "_output_combine", M::Forward, ct(x, C(kw, d, w), bias(C(kb, d, b))),
        C(1, d, ct(R(d, x), w, b)), dense && is_dim(kw, w, 1) && bias_dim);
    add(n + "_channel_reduction", M::Forward, Red(d, ct(P(k, d, x), P(kw, d, w), R(d, b))),
        ct(x, w, b), dense && is_dim(k, x, 1) && is_dim(kw, w, 0));
    add(n + "_channel_combine", M::Forward, ct(C(k, d, x), C(kw, d, w), b),
        Red(d, ct(x, w, R(d, b))), dense && is_dim(k, x, 1) && is_dim(kw, w, 0));
  }
}

}  // namespace unity::rules::spec
