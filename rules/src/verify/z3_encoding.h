#pragma once
// Translation of spec terms to Z3: tensors are an uninterpreted sort T, each (operator, arity,
// output) an uninterpreted function from its attribute slots and tensor inputs to T; ok, rank,
// degree, replica and size are uninterpreted functions on T. Lists (perm, axes, sizes, kernel, ...)
// are integer codes, one per distinct literal, whose length, elements and derived functions are
// stated as ground facts (list_facts) for the codes a query uses.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <z3++.h>

#include "theory.h"

namespace unity::rules::spec {

class Z3Encoder {
 public:
  explicit Z3Encoder(z3::context& ctx);

  z3::context& ctx() { return ctx_; }
  z3::sort tensor_sort() const { return tensor_; }
  z3::expr ok(const z3::expr& t) { return ok_(t); }
  z3::expr rank(const z3::expr& t) { return rank_(t); }

  // Every variable of `e` must be in `vars`.
  z3::expr encode(const ExprPtr& e, const std::map<std::string, z3::expr>& vars);
  z3::sort sort_of(Sort s);

  // Quantified formulas for the theory's axioms and facts.
  std::vector<z3::expr> theory_formulas(const Theory& theory);
  // The formulas of some facts alone (an operator's own, added inside a query's scope).
  std::vector<z3::expr> fact_formulas(const std::vector<Fact>& facts);
  // The formulas of some axioms alone (a query's own, added inside its scope).
  std::vector<z3::expr> axiom_formulas(const std::vector<Axiom>& axioms);
  // Strictness (a defined application has defined inputs) for operator functions created since the
  // theory was encoded: a query asserts them in its own scope; those of an operator asserted on
  // demand (operator_theory), only in the queries that name it.
  // `named`: the operators the query names (operators_named).
  std::vector<z3::expr> query_strictness_formulas(const std::vector<OpType>& named);
  // Declares the functions of every operator for the usual arities up front, so that their
  // strictness is part of the theory.
  void declare_common_operators();
  // Lists met since the last begin_query() get their facts from query_list_facts(): lengths,
  // elements, membership, positions, and compositions of permutations of equal length (closed under
  // composition). Lists of the theory itself get theirs with theory_formulas().
  void begin_query() { touched_.clear(); }
  std::vector<z3::expr> query_list_facts();

  int list_code(const std::vector<std::int64_t>& list);
  // A universally quantified formula with E-matching patterns (each a list of terms).
  z3::expr forall(const std::vector<z3::expr>& bound,
                  const std::vector<std::vector<z3::expr>>& patterns, const z3::expr& body);

 private:
  // The function of `op`'s applications. `closed`: with the slots a source pattern must name
  // (attribute_schema.h); without them (where they hold their defaults) it is the function the
  // operator was before they existed, so the queries of rules that never set one are unchanged.
  z3::func_decl op_decl(OpType op, int arity, int output, bool closed = false);
  z3::expr quantified(const std::map<std::string, Sort>& vars, const std::string& prefix,
                      const std::vector<std::vector<ExprPtr>>& patterns, const ExprPtr& lhs,
                      const ExprPtr& rhs, const ExprPtr& guard, Axiom::Mode mode, bool is_fact,
                      const ExprPtr& trigger = nullptr);

  z3::context& ctx_;
  z3::sort tensor_;
  z3::func_decl ok_, rank_, degree_, replica_, size_;
  z3::func_decl list_len_, list_at_, perm_pos_, compose_, contains_, count_below_;
  std::map<std::string, z3::func_decl> ops_;
  std::vector<z3::expr> new_strictness_formulas();

  std::vector<std::pair<z3::func_decl, std::pair<OpType, int>>> pending_strictness_;
  std::vector<z3::expr> query_strictness_;
  static bool on_demand(OpType op);
  std::map<OpType, std::vector<z3::expr>> on_demand_strictness_;
  bool theory_done_ = false;
  std::vector<z3::expr> facts_for(const std::set<int>& codes, const std::set<int>& known);

  std::map<std::vector<std::int64_t>, int> codes_;
  std::vector<std::vector<std::int64_t>> lists_;
  std::set<int> touched_;
  std::set<int> base_codes_;
};

// Whether a term may serve as an E-matching pattern: operator applications and variables only.
bool is_pattern(const ExprPtr& e);

}  // namespace unity::rules::spec
