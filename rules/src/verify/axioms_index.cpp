// The index operators' part of the theory (TopK, GatherElements, ScatterElements, OneHot, ArgMax,
// ArgMin): each reads its axis whole, so a split of any other dim, on all inputs alike where they
// have that dim at one size, passes through it (to every output); copies pass through as copies.
// Given to the queries whose rules name the operator (operator_theory), like the operators along
// an axis.
#include "theory.h"
#include "unity/core/ops/operator_definition.h"

namespace unity::rules::spec {
namespace {

using M = Axiom::Mode;
using O = OpType;

}  // namespace

void add_index_axioms(Theory& th, OpType op) {
  const std::string n(to_string(op));
  const E x = tvar("x"), y = tvar("y"), z = tvar("z");
  const E k = ivar("k"), d = ivar("d");
  const int arity = op == O::GatherElements ? 2 : op == O::ScatterElements ? 3 : 1;
  const int outputs = op == O::TopK ? 2 : 1;
  std::vector<E> args = {x, y, z};
  args.resize(static_cast<std::size_t>(arity));
  auto add = [&](const std::string& name, M mode, E lhs, E rhs, E guard) {
    th.axioms.push_back({name, mode, std::move(lhs), std::move(rhs), std::move(guard), E()});
  };
  for (int o = 0; o < outputs; ++o) {
    std::map<std::string, E> attrs;
    auto f = [&](const std::vector<E>& in) { return with_attr_vars(op, in, "a_", attrs, o); };
    f(args);
    const std::string suffix = outputs > 1 ? "_" + std::to_string(o) : "";
    const E nk = norm(k, rank(x));
    // The split dim as the output counts it, and where it may be split.
    E out_dim = nk;
    E guard = ilit(0) <= nk && nk < rank(x);
    if (op == O::OneHot) {
      // The output's dim at `axis` is new: dims before it keep their place.
      guard = guard && nk < norm(attrs.at("axis"), rank(x) + 1);
    } else {
      // ArgMax/ArgMin's keepdims is a closed slot: these applications keep their dims.
      guard = guard && nk != norm(attrs.at("axis"), rank(x));
    }
    // The indices agree with the data on the split dim (ScatterElements' updates have the
    // indices' sizes wherever it is defined).
    if (arity > 1) guard = guard && rank(y) == rank(x) && size(y, nk) == size(x, nk);
    std::vector<E> parted, combined, replicated;
    for (const E& a : args) {
      parted.push_back(P(k, d, a));
      combined.push_back(C(k, d, a));
      replicated.push_back(R(d, a));
    }
    // Its rank and replicas (the shape inference's), which the proofs' splits refer to.
    const E a = f(args);
    E rank_holds = op == O::OneHot ? rank(a) == rank(x) + 1 : rank(a) == rank(x);
    for (int s = 1; s < arity; ++s)
      rank_holds = rank_holds && rank(args[static_cast<std::size_t>(s)]) == rank(x);
    // The axis is read whole: where a split falls on it, the split application is undefined.
    if (op != O::OneHot)
      rank_holds = rank_holds && -rank(x) <= attrs.at("axis") && attrs.at("axis") < rank(x) &&
                   degree(x, norm(attrs.at("axis"), rank(x))) == 1;
    th.facts.push_back(
        {n + "_shape" + suffix, a, !ok(a) || (rank_holds && replica(a) == replica(x)), E()});
    add(n + "_partition" + suffix, M::Both, f(parted), P(out_dim, d, f(args)), guard);
    add(n + "_combine" + suffix, M::Both, f(combined), C(out_dim, d, f(args)), guard);
    add(n + "_replicate" + suffix, M::Both, f(replicated), R(d, f(args)), E());
  }
}

}  // namespace unity::rules::spec
