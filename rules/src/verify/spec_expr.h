#pragma once
// Terms of the verifier's logic: tensors built from operator applications, and the integer, real,
// list and boolean expressions that operator attributes and axiom guards are made of. One term is
// both translated to Z3 (z3_encoding.h) and evaluated on concrete values (spec_eval.h), which is
// how the axioms are tested against the evaluator.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "unity/core/pcg/op_type.h"

namespace unity::rules::spec {

enum class Sort { Tensor, Int, Real, List, Bool };

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

struct Expr {
  enum class Kind {
    Var,
    IntLit,
    RealLit,
    ListLit,
    BoolLit,
    Op,       // operator application: attrs in schema order, then tensor args
    Ok,       // ok(t): the tensor is defined
    Rank,     // rank(t)
    Degree,   // degree(t, i)
    Replica,  // replica(t)
    Size,     // size(t, i)
    Add,
    Sub,
    Mul,
    Mod,  // a mod b (b > 0)
    ToReal,
    Lt,
    Le,
    Eq,
    Ne,
    And,
    Or,
    Not,
    Ite,
    Norm,  // norm(k, r): k + r when k < 0 (negative axes count from the end)
    ListLen,
    ListAt,     // list[i]
    PermPos,    // the i with perm[i] = k
    Compose,    // r[i] = q[p[i]] for compose(q, p): Transpose(p, Transpose(q, x)) = Transpose(r, x)
    Contains,   // k in list
    CountBelow  // number of list entries < k
  };
  Kind kind = Kind::IntLit;
  Sort sort = Sort::Int;
  std::string name;  // Var
  std::int64_t ivalue = 0;
  double rvalue = 0;
  std::vector<std::int64_t> list;
  OpType op = OpType::Identity;
  int output = 0;              // Op: which output of a multi-output operator
  std::vector<ExprPtr> attrs;  // Op
  std::vector<ExprPtr> args;   // Op tensors, or operands
};

// A value-semantics handle with operators, so axioms read like formulas.
class E {
 public:
  E() = default;
  E(ExprPtr p) : p_(std::move(p)) {}  // NOLINT(google-explicit-constructor)
  E(int v);                           // NOLINT(google-explicit-constructor): integer literal
  const ExprPtr& ptr() const { return p_; }
  const Expr* operator->() const { return p_.get(); }
  explicit operator bool() const { return static_cast<bool>(p_); }
  // Test for "no expression" with this, never with `!e`: `!` builds the formula not(e).
  bool empty() const { return !p_; }

 private:
  ExprPtr p_;
};

E tvar(const std::string& name);
E ivar(const std::string& name);
E rvar(const std::string& name);
E lvar(const std::string& name);
E ilit(std::int64_t v);
E rlit(double v);
E llit(std::vector<std::int64_t> v);
E blit(bool v);

E operator+(const E& a, const E& b);
E operator-(const E& a, const E& b);
E operator-(const E& a);
E operator*(const E& a, const E& b);
E operator%(const E& a, const E& b);
E operator<(const E& a, const E& b);
E operator<=(const E& a, const E& b);
E operator>(const E& a, const E& b);
E operator>=(const E& a, const E& b);
E operator==(const E& a, const E& b);
E operator!=(const E& a, const E& b);
E operator&&(const E& a, const E& b);
E operator||(const E& a, const E& b);
E operator!(const E& a);
E ite(const E& c, const E& a, const E& b);
E to_real(const E& a);

E ok(const E& t);
E rank(const E& t);
E degree(const E& t, const E& i);
E replica(const E& t);
E size(const E& t, const E& i);
E norm(const E& k, const E& r);  // the axis k of a tensor of rank r, non-negative
E list_len(const E& l);
E list_at(const E& l, const E& i);
E perm_pos(const E& p, const E& k);
E compose(const E& q, const E& p);
E contains(const E& l, const E& k);
E count_below(const E& l, const E& k);

// An operator application. `attrs` names schema slots; a slot left out takes the operator's
// default.
E app(OpType op, const std::map<std::string, E>& attrs, const std::vector<E>& args, int output = 0);

// Free variables of a term, with their sorts.
void collect_vars(const ExprPtr& e, std::map<std::string, Sort>& out);
std::string to_string(const ExprPtr& e);

}  // namespace unity::rules::spec
