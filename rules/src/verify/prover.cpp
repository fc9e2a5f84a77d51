#include "prover.h"

#include <algorithm>
#include <climits>

#include <fmt/format.h>

namespace unity::rules::spec {
namespace {

void collect(const std::vector<E>& terms, std::map<std::string, Sort>& vars) {
  for (const auto& t : terms) collect_vars(t.ptr(), vars);
}

// A Concat whose pieces attribute is other than the literal 1.
bool cut_into_pieces(const Expr& e) {
  return e.attrs.size() > 1 && !(e.attrs[1]->kind == Expr::Kind::IntLit && e.attrs[1]->ivalue == 1);
}

// The most inputs of a Concat in the terms; with `cut`, of a Concat cut into pieces.
int largest_concat(const ExprPtr& e, bool cut) {
  if (e.get() == nullptr) return 0;
  int n = e->kind == Expr::Kind::Op && e->op == OpType::Concat && (!cut || cut_into_pieces(*e))
              ? static_cast<int>(e->args.size())
              : 0;
  for (const auto& a : e->args) n = std::max(n, largest_concat(a, cut));
  for (const auto& a : e->attrs) n = std::max(n, largest_concat(a, cut));
  return n;
}

int largest_concat(const RuleTerms& t, bool cut = false) {
  int n = 0;
  for (const auto* list : {&t.nodes, &t.source_outputs, &t.target_outputs})
    for (const auto& e : *list) n = std::max(n, largest_concat(e.ptr(), cut));
  return n;
}

}  // namespace

Prover::Prover() : encoder_(ctx_), solver_(ctx_) {
  // E-matching only: model-based instantiation would look for models of the uninterpreted tensor
  // sort, which never ends in a proof and only spends the time limit.
  z3::params p(ctx_);
  p.set("mbqi", false);
  solver_.set(p);
  for (const auto& f : encoder_.theory_formulas(theory())) solver_.add(f);
}

ProofResult Prover::prove(const RuleTerms& t, const std::map<std::string, std::int64_t>& fixed,
                          const ProofLimits& limits) {
  std::map<std::string, Sort> vars;
  collect(t.nodes, vars);
  collect(t.source_outputs, vars);
  collect(t.target_outputs, vars);
  collect(t.premises, vars);
  solver_.push();
  encoder_.begin_query();
  // The concat_peel axioms for Concats of 3 up to the largest this query holds.
  const int concat = std::min(largest_concat(t), kMaxConcatInputs);
  if (concat >= 3) {
    const auto& peel = concat_peel_axioms();
    for (const auto& f : encoder_.axiom_formulas({peel.begin(), peel.begin() + (concat - 2)}))
      solver_.add(f);
  }
  if (const int pieces = std::min(largest_concat(t, true), kMaxConcatInputs); pieces >= 1) {
    const auto& def = concat_pieces_axioms();
    for (const auto& f : encoder_.axiom_formulas({def.begin(), def.begin() + pieces}))
      solver_.add(f);
  }
  // The axioms of the operators added since the first theory that this rule names.
  std::vector<const E*> terms;
  for (const auto* list : {&t.nodes, &t.source_outputs, &t.target_outputs, &t.premises})
    for (const auto& e : *list) terms.push_back(&e);
  const std::vector<OpType> named = operators_named(terms);
  for (OpType op : named)
    if (const Theory& own = operator_theory(op); !own.axioms.empty() || !own.facts.empty()) {
      for (const auto& f : encoder_.axiom_formulas(own.axioms)) solver_.add(f);
      for (const auto& f : encoder_.fact_formulas(own.facts)) solver_.add(f);
    }
  std::map<std::string, z3::expr> env;
  for (const auto& [name, sort] : vars)
    env.emplace(name, ctx_.constant(("r." + name).c_str(), encoder_.sort_of(sort)));
  for (const auto& [name, value] : fixed)
    if (env.count(name))
      solver_.add(env.at(name) == ctx_.int_val(static_cast<std::int64_t>(value)));
  for (const auto& n : t.nodes) solver_.add(encoder_.ok(encoder_.encode(n.ptr(), env)));
  for (const auto& p : t.premises) solver_.add(encoder_.encode(p.ptr(), env));
  z3::expr differ = ctx_.bool_val(false);
  for (std::size_t o = 0; o < t.source_outputs.size(); ++o) {
    const z3::expr s = encoder_.encode(t.source_outputs[o].ptr(), env);
    const z3::expr g = encoder_.encode(t.target_outputs[o].ptr(), env);
    // The substitution only applies where the outputs' parallel shapes agree.
    solver_.add(encoder_.rank(s) == encoder_.rank(g));
    const E si = tvar("s"), gi = tvar("g");
    const E i = ivar("i");
    std::map<std::string, z3::expr> qenv = {{"s", s}, {"g", g}};
    const z3::expr iv = ctx_.constant(fmt::format("shape{}!i", o).c_str(), ctx_.int_sort());
    qenv.emplace("i", iv);
    const z3::expr same =
        encoder_.encode((degree(si, i) == degree(gi, i) && size(si, i) == size(gi, i)).ptr(), qenv);
    const z3::expr rep = encoder_.encode((replica(si) == replica(gi)).ptr(), qenv);
    solver_.add(rep);
    std::vector<std::vector<z3::expr>> patterns;
    for (const E& side : {si, gi})
      for (const E& f : {degree(side, i), size(side, i)})
        patterns.push_back({encoder_.encode(f.ptr(), qenv)});
    solver_.add(encoder_.forall({iv}, patterns, same));
    differ = differ || s != g;
  }
  solver_.add(differ);
  for (const auto& f : encoder_.query_strictness_formulas(named)) solver_.add(f);
  for (const auto& f : encoder_.query_list_facts()) solver_.add(f);
  z3::params p(ctx_);
  p.set("rlimit", static_cast<unsigned>(std::min<std::uint64_t>(limits.effort, UINT_MAX)));
  p.set("timeout", limits.timeout_ms > 0 ? static_cast<unsigned>(limits.timeout_ms) : UINT_MAX);
  solver_.set(p);
  ProofResult result;
  z3::check_result checked = z3::unknown;
  try {
    checked = solver_.check();
  } catch (const z3::exception&) {
    // Z3 gives up on some queries with "max. memory exceeded" before the time limit: a resource
    // limit like the timeout, not an error of the rule.
    solver_.pop();
    return ProofResult::Timeout;
  }
  switch (checked) {
    case z3::unsat:
      result = ProofResult::Proved;
      break;
    case z3::sat:
      result = ProofResult::NotProved;
      break;
    default:
      result = solver_.reason_unknown() == "timeout" || solver_.reason_unknown() == "canceled" ||
                       solver_.reason_unknown() == "max. resource limit exceeded"
                   ? ProofResult::Timeout
                   : ProofResult::NotProved;
  }
  solver_.pop();
  return result;
}

}  // namespace unity::rules::spec
