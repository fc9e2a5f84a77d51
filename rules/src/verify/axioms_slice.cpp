// The axioms of an operator with a slice layout (core's SliceLayout: Random, Det), given only to
// the proofs whose rules name it (operator_theory). It computes each slice over the last
// `whole_dims` dims of its input on its own, so the output keeps every dim before them (size and
// degree), a Partition, Combine, Pipeline or Batch of such a dim passes through to the output's
// dim of the same index, and copies pass as copies. It is not linear: no Reduce axioms.
#include "theory.h"
#include "unity/core/ops/operator_definition.h"

namespace unity::rules::spec {

void add_slice_axioms(Theory& th, OpType op, const SliceLayout& layout) {
  using M = Axiom::Mode;
  const std::string n(to_string(op));
  const E k = ivar("k"), d = ivar("d"), i = ivar("i");
  const E x = tvar("x");
  std::map<std::string, E> attrs;
  auto f = [&](const E& in) { return with_attr_vars(op, {in}, "a_", attrs); };
  const E a = f(x);
  const E leading = rank(x) - ilit(layout.whole_dims);
  th.facts.push_back(
      {n + "_rank", a, !ok(a) || rank(a) == leading + ilit(layout.output_dims), E()});
  th.facts.push_back({n + "_dims", size(a, i),
                      !(ok(a) && ilit(0) <= i && i < leading) ||
                          (size(a, i) == size(x, i) && degree(a, i) == degree(x, i)),
                      E()});
  const E nk = norm(k, rank(x));
  const E guard = ilit(0) <= nk && nk < leading;
  const std::vector<std::pair<std::string, E (*)(const E&, const E&, const E&)>> dim_ops = {
      {"partition", P}, {"combine", C}, {"pipeline", Pipe}, {"batch", Bat}};
  for (const auto& [fn, g] : dim_ops)
    th.axioms.push_back({n + "_" + fn, M::Both, f(g(k, d, x)), g(k, d, f(x)), guard, E()});
  th.axioms.push_back({n + "_replicate", M::Both, f(R(d, x)), R(d, f(x)), E(), E()});
}

}  // namespace unity::rules::spec
