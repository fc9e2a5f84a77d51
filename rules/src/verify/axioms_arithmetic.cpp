// Arithmetic's part of the theory (operator_theory: asserted only in proofs of rules that name it).
// Operands of one shape split alike as the mask operators' do (axioms_mask.cpp). With two operands
// of which the second is broadcast along the split dim (PRelu's slope [C, 1, 1] against x
// [N, C, H, W] split along N), the first splits and the second is copied to every piece, as Add's
// bias is (axioms_compute.cpp). Not linear: no Reduce axioms.
#include "theory.h"
#include "unity/core/ops/operator_definition.h"

namespace unity::rules::spec {

void add_arithmetic_theory(Theory& th) {
  using M = Axiom::Mode;
  const OpType op = OpType::Arithmetic;
  add_mask_axioms(th, op);
  const E x = tvar("x"), y = tvar("y"), k = ivar("k"), d = ivar("d");
  std::map<std::string, E> attrs;
  auto f = [&](const E& l, const E& r) { return with_attr_vars(op, {l, r}, "a_", attrs); };
  const E a = f(x, y);
  th.facts.push_back({"Arithmetic_broadcast_rank", a,
                      !ok(a) || rank(a) == ite(rank(x) < rank(y), rank(y), rank(x)), E()});
  // Dim k of x that y, of no higher rank (the output is x's rank), lacks or has at size 1.
  const E nk = norm(k, rank(x));
  const E jy = nk - rank(x) + rank(y);
  const E broadcast =
      rank(y) <= rank(x) && ilit(0) <= nk && nk < rank(x) && (jy < 0 || size(y, jy) == 1);
  auto add = [&](std::string name, const E& lhs, const E& rhs) {
    th.axioms.push_back({std::move(name), M::Forward, lhs, rhs, broadcast, E()});
  };
  add("Arithmetic_partition_broadcast_right", f(P(k, d, x), R(d, y)), P(k, d, f(x, y)));
  add("Arithmetic_combine_broadcast_right", f(C(k, d, x), y), C(k, d, f(x, R(d, y))));
  add("Arithmetic_pipeline_broadcast_right", f(Pipe(k, d, x), y), Pipe(k, d, f(x, y)));
  add("Arithmetic_batch_broadcast_right", f(Bat(k, d, x), y), Bat(k, d, f(x, y)));
}

}  // namespace unity::rules::spec
