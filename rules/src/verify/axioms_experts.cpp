// The Experts operator's part of the theory (operator_theory: asserted only in proofs of rules
// that name it). x [tokens..., H], gates g [tokens..., E], w1 and w3 [E, H, F], w2 [E, F, H]:
// the tokens (dim 0 of x and g) split with the experts copied; the experts (g's last dim, every
// weight's dim 0) or the FFN width (w1 and w3 dim 2, w2 dim 1) split with the tokens copied leave
// partial sums that add up to the whole (each block's experts, or columns of every expert's
// hidden layer, contribute their own terms of the sum).
#include "theory.h"

namespace unity::rules::spec {

void add_experts_theory(Theory& th) {
  using M = Axiom::Mode;
  const E x = tvar("x"), g = tvar("g"), w1 = tvar("w1"), w2 = tvar("w2"), w3 = tvar("w3");
  const E k = ivar("k"), d = ivar("d"), kg = ivar("kg"), k1 = ivar("k1"), k2 = ivar("k2"),
          k3 = ivar("k3");
  auto is_dim = [](const E& kk, const E& t, const E& at) { return norm(kk, rank(t)) == at; };
  for (int arity : {4, 5}) {
    std::map<std::string, E> attrs;
    auto ex = [&](const E& xx, const E& gg, const E& a1, const E& a2, const E& a3) {
      return with_attr_vars(
          OpType::Experts,
          arity == 4 ? std::vector<E>{xx, gg, a1, a2} : std::vector<E>{xx, gg, a1, a2, a3}, "a_",
          attrs);
    };
    const E a = ex(x, g, w1, w2, w3);
    E holds = ilit(2) <= rank(x) && rank(g) == rank(x) && rank(a) == rank(x) && rank(w1) == 3 &&
              rank(w2) == 3 && degree(a, 0) == degree(x, 0) && degree(g, 0) == degree(x, 0);
    if (arity == 5) holds = holds && rank(w3) == 3;
    const std::string t = "Experts" + std::to_string(arity);
    th.facts.push_back({t + "_shape", a, !ok(a) || holds, E()});

    // Without w3 its slot is void: the guards and terms below leave it as the variable.
    auto third = [&](const E& e) { return arity == 5 ? e : w3; };
    const E third_dim = arity == 5 ? is_dim(k3, w3, 0) : blit(true);
    const E third_ffn = arity == 5 ? is_dim(k3, w3, 2) : blit(true);
    const std::string n = arity == 5 ? "experts" : "experts_gelu";
    auto add = [&](const std::string& name, M mode, const E& lhs, const E& rhs, const E& guard) {
      th.axioms.push_back({name, mode, lhs, rhs, guard, E()});
    };
    const E tokens = is_dim(k, x, 0) && is_dim(kg, g, 0);
    add(n + "_token_partition", M::Both,
        ex(P(k, d, x), P(kg, d, g), R(d, w1), R(d, w2), third(R(d, w3))), P(k, d, a), tokens);
    add(n + "_token_combine", M::Both, ex(C(k, d, x), C(kg, d, g), w1, w2, w3),
        C(k, d, ex(x, g, R(d, w1), R(d, w2), third(R(d, w3)))), tokens);
    add(n + "_expert_reduction", M::Forward,
        Red(d, ex(R(d, x), P(kg, d, g), P(k1, d, w1), P(k2, d, w2), third(P(k3, d, w3)))), a,
        is_dim(kg, g, rank(g) - 1) && is_dim(k1, w1, 0) && is_dim(k2, w2, 0) && third_dim);
    add(n + "_ffn_reduction", M::Forward,
        Red(d, ex(R(d, x), R(d, g), P(k1, d, w1), P(k2, d, w2), third(P(k3, d, w3)))), a,
        is_dim(k1, w1, 2) && is_dim(k2, w2, 1) && third_ffn);
  }
}

}  // namespace unity::rules::spec
