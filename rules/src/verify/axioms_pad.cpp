// Pad's part of the theory (operator_theory: asserted only in proofs of rules that name it). A dim
// with pads at either end must be whole (degree 1); every other dim passes through with its size
// and degree, so a Partition, Combine, Pipeline or Batch of a dim whose pads are both 0 commutes
// with it, and copies pass as copies. (Reduce is left out: a non-zero constant is not linear.)
// GatherND and ScatterND split no dim but GatherND's batch dims and have no axioms yet: rules that
// name them are not proved.
#include "theory.h"

namespace unity::rules::spec {

void add_pad_theory(Theory& th) {
  using M = Axiom::Mode;
  const E x = tvar("x"), k = ivar("k"), d = ivar("d"), i = ivar("i");
  std::map<std::string, E> attrs;
  auto u = [&](const E& arg) { return with_attr_vars(OpType::Pad, {arg}, "a_", attrs); };
  const E a = u(x);
  const E pads = attrs.at("pads");
  auto unpadded = [&](const E& dim) {
    return list_at(pads, dim) == 0 && list_at(pads, dim + rank(x)) == 0;
  };
  th.facts.push_back(
      {"Pad_shape", a,
       !ok(a) || (rank(a) == rank(x) && replica(a) == replica(x) && list_len(pads) == 2 * rank(x)),
       E()});
  th.facts.push_back({"Pad_degrees", degree(a, i), !ok(a) || degree(a, i) == degree(x, i), E()});
  th.facts.push_back({"Pad_sizes", size(a, i),
                      !(ok(a) && ilit(0) <= i && i < rank(x)) ||
                          size(a, i) == size(x, i) + list_at(pads, i) + list_at(pads, i + rank(x)),
                      E()});
  th.facts.push_back({"Pad_whole", degree(a, i),
                      !(ok(a) && ilit(0) <= i && i < rank(x) && !unpadded(i)) || degree(x, i) == 1,
                      E()});

  const E nk = norm(k, rank(x));
  const E passes = ilit(0) <= nk && nk < rank(x) && unpadded(nk);
  const std::vector<std::pair<std::string, E (*)(const E&, const E&, const E&)>> dim_ops = {
      {"partition", P}, {"combine", C}, {"pipeline", Pipe}, {"batch", Bat}};
  for (const auto& [fn, f] : dim_ops)
    th.axioms.push_back({"Pad_" + fn, M::Both, u(f(k, d, x)), f(k, d, u(x)), passes, E()});
  th.axioms.push_back({"Pad_replicate", M::Both, u(R(d, x)), R(d, u(x)), E(), E()});
}

}  // namespace unity::rules::spec
