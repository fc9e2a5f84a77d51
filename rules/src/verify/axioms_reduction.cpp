// Reduction's part of the theory (operator_theory: asserted only in proofs of rules that name it).
// With keepdims, a dim whose size it keeps (not reduced, or reduced from size 1, where every
// reduction is point-wise) passes through with its degree, so a Partition, Combine, Pipeline or
// Batch of it commutes with the Reduction. Copies pass through as copies. A reduced dim is whole
// (max, min, prod, l2, log_sum, log_sum_exp) or leaves partial sums (l1, sum_square): no axiom
// moves a split of it, so no rule of the theory splits one.
#include "theory.h"

namespace unity::rules::spec {

void add_reduction_theory(Theory& th) {
  using M = Axiom::Mode;
  const E x = tvar("x"), k = ivar("k"), d = ivar("d"), i = ivar("i");
  std::map<std::string, E> attrs;
  auto u = [&](const E& arg) { return with_attr_vars(OpType::Reduction, {arg}, "a_", attrs); };
  const E a = u(x);
  const E axes = attrs.at("axes"), keep = attrs.at("keepdims");
  // Axes are stored non-negative; guards read them literally.
  const E literal = count_below(axes, 0) == 0;
  const E kept = keep != 0 && !contains(axes, i);
  th.facts.push_back(
      {"Reduction_shape", a,
       !ok(a) || (rank(a) == ite(keep != 0, rank(x), rank(x) - list_len(axes)) && literal), E()});
  th.facts.push_back(
      {"Reduction_kept", degree(a, i),
       !(ok(a) && kept) || (degree(a, i) == degree(x, i) && size(a, i) == size(x, i)), E()});
  th.facts.push_back({"Reduction_reduced", size(a, i),
                      !(ok(a) && keep != 0 && contains(axes, i)) || size(a, i) == 1, E()});

  // With keepdims, a dim whose size it keeps passes (reduced from size 1: point-wise).
  const E nk = norm(k, rank(x));
  const E passes = keep != 0 && ilit(0) <= nk && nk < rank(x) && size(u(x), nk) == size(x, nk);
  const std::vector<std::pair<std::string, E (*)(const E&, const E&, const E&)>> dim_ops = {
      {"partition", P}, {"combine", C}, {"pipeline", Pipe}, {"batch", Bat}};
  for (const auto& [fn, f] : dim_ops)
    th.axioms.push_back({"Reduction_" + fn, M::Both, u(f(k, d, x)), f(k, d, u(x)), passes, E()});
  // Replicas of the input stay outer to any new partial sums.
  th.axioms.push_back(
      {"Reduction_replicate", M::Both, u(R(d, x)), R(d, u(x)), replica(u(x)) == replica(x), E()});
}

}  // namespace unity::rules::spec
