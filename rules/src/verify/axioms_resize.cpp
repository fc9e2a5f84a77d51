// Resize's part of the theory (operator_theory: asserted only in proofs of rules that name it).
// The axes it lists take new sizes and, where the size changes, must be whole; every other dim
// passes through with its size and degree, so a Partition, Combine, Pipeline or Batch of a dim
// whose size it keeps commutes with it (a listed axis resized to its own size is the identity). It
// is linear (a fixed weighted sum per output element): it commutes with Replicate, and with Reduce
// and AllReduce (partial sums resample to partial sums).
#include "theory.h"

namespace unity::rules::spec {

void add_resize_theory(Theory& th) {
  using M = Axiom::Mode;
  const E x = tvar("x"), k = ivar("k"), d = ivar("d"), i = ivar("i");
  std::map<std::string, E> attrs;
  auto u = [&](const E& arg) { return with_attr_vars(OpType::Resize, {arg}, "a_", attrs); };
  const E a = u(x);
  const E axes = attrs.at("axes");
  // Axes are stored non-negative and increasing; guards read them literally.
  const E literal = count_below(axes, 0) == 0;
  const E listed = contains(axes, i);
  th.facts.push_back({"Resize_shape", a,
                      !ok(a) || (rank(a) == rank(x) && replica(a) == replica(x) && literal), E()});
  th.facts.push_back({"Resize_degrees", degree(a, i), !ok(a) || degree(a, i) == degree(x, i), E()});
  th.facts.push_back(
      {"Resize_sizes", size(a, i), !(ok(a) && !listed) || size(a, i) == size(x, i), E()});
  th.facts.push_back(
      {"Resize_whole", degree(a, i),
       !(ok(a) && ilit(0) <= i && i < rank(x) && size(a, i) != size(x, i)) || degree(x, i) == 1,
       E()});

  // A dim whose size it keeps (not listed, or listed with its own size: the identity) passes.
  const E nk = norm(k, rank(x));
  const E passes = ilit(0) <= nk && nk < rank(x) && size(u(x), nk) == size(x, nk);
  const std::vector<std::pair<std::string, E (*)(const E&, const E&, const E&)>> dim_ops = {
      {"partition", P}, {"combine", C}, {"pipeline", Pipe}, {"batch", Bat}};
  for (const auto& [fn, f] : dim_ops)
    th.axioms.push_back({"Resize_" + fn, M::Both, u(f(k, d, x)), f(k, d, u(x)), passes, E()});
  th.axioms.push_back({"Resize_replicate", M::Both, u(R(d, x)), R(d, u(x)), E(), E()});
  th.axioms.push_back({"Resize_reduce", M::Both, u(Red(d, x)), Red(d, u(x)), E(), E()});
  th.axioms.push_back({"Resize_allreduce", M::Both, u(AR(d, x)), AR(d, u(x)), E(), E()});
}

}  // namespace unity::rules::spec
