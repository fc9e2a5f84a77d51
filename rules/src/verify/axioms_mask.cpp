// The mask operators' part of the theory (Compare, Logical, Where, Cast), given only to the proofs
// whose rules name them (operator_theory). Where every operand has the output's rank and one size
// at the split dim (no broadcasting there), a Partition, Combine, Pipeline or Batch of that dim on
// all operands alike passes through to the output; copies pass as copies. They are not linear:
// no Reduce axioms.
#include "theory.h"
#include "unity/core/ops/operator_definition.h"

namespace unity::rules::spec {

void add_mask_axioms(Theory& th, OpType op) {
  using M = Axiom::Mode;
  const std::string n(to_string(op));
  const E k = ivar("k"), d = ivar("d"), i = ivar("i");
  const std::vector<E> vars = {tvar("x"), tvar("y"), tvar("z")};
  // Up to three operands (a variadic operator's first three: its rules name no more).
  const int min_arity = op_info(op).min_inputs;
  const int max_arity = std::min(op_info(op).max_inputs, 3);
  for (int arity = std::max(min_arity, 1); arity <= max_arity; ++arity) {
    const std::vector<E> args(vars.begin(), vars.begin() + arity);
    const std::string suffix = max_arity > min_arity ? "_" + std::to_string(arity) : "";
    std::map<std::string, E> attrs;
    auto f = [&](const std::vector<E>& in) { return with_attr_vars(op, in, "a_", attrs); };
    const E& x = args[0];
    const E a = f(args);
    // The operands of one rank, and (for the dim facts) of one size at dim i.
    E same_rank = E(), same_size = E();
    for (int s = 1; s < arity; ++s) {
      const E& t = args[static_cast<std::size_t>(s)];
      same_rank = s == 1 ? rank(t) == rank(x) : same_rank && rank(t) == rank(x);
      same_size = s == 1 ? size(t, i) == size(x, i) : same_size && size(t, i) == size(x, i);
    }
    th.facts.push_back({n + "_rank" + suffix, a,
                        arity > 1 ? (!(ok(a) && same_rank) || rank(a) == rank(x))
                                  : E(!ok(a) || rank(a) == rank(x)),
                        E()});
    const E in_range = ilit(0) <= i && i < rank(x);
    const E dims_agree =
        arity > 1 ? (ok(a) && same_rank && in_range && same_size) : E(ok(a) && in_range);
    th.facts.push_back({n + "_dims" + suffix, size(a, i),
                        !dims_agree || (size(a, i) == size(x, i) && degree(a, i) == degree(x, i)),
                        E()});
    const E nk = norm(k, rank(x));
    E guard = ilit(0) <= nk && nk < rank(x);
    for (int s = 1; s < arity; ++s) {
      const E& t = args[static_cast<std::size_t>(s)];
      guard = guard && rank(t) == rank(x) && size(t, nk) == size(x, nk);
    }
    std::vector<E> replicated;
    for (const E& t : args) replicated.push_back(R(d, t));
    const std::vector<std::pair<std::string, E (*)(const E&, const E&, const E&)>> dim_ops = {
        {"partition", P}, {"combine", C}, {"pipeline", Pipe}, {"batch", Bat}};
    for (const auto& [fn, g] : dim_ops) {
      std::vector<E> split;
      for (const E& t : args) split.push_back(g(k, d, t));
      th.axioms.push_back({n + "_" + fn + suffix, M::Both, f(split), g(k, d, f(args)), guard, E()});
    }
    th.axioms.push_back(
        {n + "_replicate" + suffix, M::Both, f(replicated), R(d, f(args)), E(), E()});
  }
}

}  // namespace unity::rules::spec
