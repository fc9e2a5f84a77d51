// Pad's part of the theory (operator_theory: asserted only in proofs of rules that name it). A dim
// with pads at either end must be whole (degree 1); every other dim passes through with its size
// and degree, so a Partition, Combine, Pipeline or Batch of a dim whose pads are both 0 commutes
// with it, and copies pass as copies. (Reduce is left out: a non-zero constant is not linear.)
// GatherND: a split of one of its batch dims (k < batch_dims), alike on data and indices, passes
// to the output's dim k (the batch dims lead every tensor); copies pass as copies. ScatterND splits
// no dim and has no axioms.
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

void add_gather_nd_theory(Theory& th) {
  using M = Axiom::Mode;
  const E x = tvar("x"), y = tvar("y"), k = ivar("k"), d = ivar("d");
  std::map<std::string, E> attrs;
  auto g = [&](const E& data, const E& idx) {
    return with_attr_vars(OpType::GatherND, {data, idx}, "a_", attrs);
  };
  const E a = g(x, y);
  const E b = attrs.at("batch_dims");
  th.facts.push_back({"GatherND_shape", a,
                      !ok(a) || (replica(a) == replica(x) && replica(y) == replica(x) &&
                                 ilit(0) <= b && b < rank(x) && b < rank(y)),
                      E()});
  const E i = ivar("i");
  th.facts.push_back({"GatherND_batch", size(a, i),
                      !(ok(a) && ilit(0) <= i && i < b) ||
                          (size(y, i) == size(x, i) && degree(y, i) == degree(x, i) &&
                           size(a, i) == size(x, i) && degree(a, i) == degree(x, i)),
                      E()});
  // A batch dim: its size and degree are the same on data, indices and the output.
  const E batch = ilit(0) <= k && k < b && size(y, k) == size(x, k);
  th.axioms.push_back(
      {"GatherND_partition", M::Both, g(P(k, d, x), P(k, d, y)), P(k, d, g(x, y)), batch, E()});
  th.axioms.push_back(
      {"GatherND_combine", M::Both, g(C(k, d, x), C(k, d, y)), C(k, d, g(x, y)), batch, E()});
  th.axioms.push_back(
      {"GatherND_replicate", M::Both, g(R(d, x), R(d, y)), R(d, g(x, y)), E(), E()});
}

}  // namespace unity::rules::spec
