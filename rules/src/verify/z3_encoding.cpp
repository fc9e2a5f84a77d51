#include "z3_encoding.h"

#include <stdexcept>

#include <fmt/format.h>

#include "attribute_schema.h"

namespace unity::rules::spec {
namespace {

using K = Expr::Kind;

bool is_permutation(const std::vector<std::int64_t>& l) {
  std::vector<bool> seen(l.size(), false);
  for (auto v : l) {
    if (v < 0 || v >= static_cast<std::int64_t>(l.size()) || seen[static_cast<std::size_t>(v)])
      return false;
    seen[static_cast<std::size_t>(v)] = true;
  }
  return true;
}

// Codes start far from small integers so that a list never equals an unrelated integer by accident
// in a printed model.
constexpr int kFirstCode = 1000;

}  // namespace

bool is_pattern(const ExprPtr& e) {
  switch (e->kind) {
    case K::Var:
    case K::IntLit:
    case K::RealLit:
    case K::ListLit:
      return true;
    case K::Op:
      for (const auto& a : e->attrs)
        if (!is_pattern(a)) return false;
      for (const auto& a : e->args)
        if (!is_pattern(a)) return false;
      return true;
    default:
      return false;
  }
}

Z3Encoder::Z3Encoder(z3::context& ctx)
    : ctx_(ctx),
      tensor_(ctx.uninterpreted_sort("T")),
      ok_(ctx.function("ok", tensor_, ctx.bool_sort())),
      rank_(ctx.function("rank", tensor_, ctx.int_sort())),
      degree_(ctx.function("degree", tensor_, ctx.int_sort(), ctx.int_sort())),
      replica_(ctx.function("replica", tensor_, ctx.int_sort())),
      size_(ctx.function("size", tensor_, ctx.int_sort(), ctx.int_sort())),
      list_len_(ctx.function("list_len", ctx.int_sort(), ctx.int_sort())),
      list_at_(ctx.function("list_at", ctx.int_sort(), ctx.int_sort(), ctx.int_sort())),
      perm_pos_(ctx.function("perm_pos", ctx.int_sort(), ctx.int_sort(), ctx.int_sort())),
      compose_(ctx.function("compose", ctx.int_sort(), ctx.int_sort(), ctx.int_sort())),
      contains_(ctx.function("contains", ctx.int_sort(), ctx.int_sort(), ctx.bool_sort())),
      count_below_(ctx.function("count_below", ctx.int_sort(), ctx.int_sort(), ctx.int_sort())) {}

z3::sort Z3Encoder::sort_of(Sort s) {
  switch (s) {
    case Sort::Tensor:
      return tensor_;
    case Sort::Real:
      return ctx_.real_sort();
    case Sort::Bool:
      return ctx_.bool_sort();
    default:
      return ctx_.int_sort();
  }
}

int Z3Encoder::list_code(const std::vector<std::int64_t>& list) {
  auto it = codes_.find(list);
  int code;
  if (it != codes_.end()) {
    code = it->second;
  } else {
    code = kFirstCode + static_cast<int>(lists_.size());
    codes_[list] = code;
    lists_.push_back(list);
  }
  touched_.insert(code);
  return code;
}

z3::func_decl Z3Encoder::op_decl(OpType op, int arity, int output, bool closed) {
  const std::string key =
      fmt::format("{}/{}/{}{}", to_string(op), arity, output, closed ? "/closed" : "");
  auto it = ops_.find(key);
  if (it != ops_.end()) return it->second;
  z3::sort_vector domain(ctx_);
  for (const auto& slot : attribute_slots(op))
    if (closed || !slot.closed)
      domain.push_back(slot.kind == AttrKind::Real ? ctx_.real_sort() : ctx_.int_sort());
  for (int i = 0; i < arity; ++i) domain.push_back(tensor_);
  z3::func_decl f = ctx_.function(key.c_str(), domain, tensor_);
  ops_.emplace(key, f);
  pending_strictness_.push_back({f, {op, arity}});
  return f;
}

z3::expr Z3Encoder::encode(const ExprPtr& e, const std::map<std::string, z3::expr>& vars) {
  auto arg = [&](std::size_t i) { return encode(e->args[i], vars); };
  switch (e->kind) {
    case K::Var: {
      auto it = vars.find(e->name);
      if (it == vars.end()) throw std::logic_error("unbound variable " + e->name);
      return it->second;
    }
    case K::IntLit:
      return ctx_.int_val(static_cast<std::int64_t>(e->ivalue));
    case K::RealLit: {
      // Exact decimal of the double, so 0.1 stays 0.1 and products of literals stay exact.
      return ctx_.real_val(fmt::format("{}", e->rvalue).c_str());
    }
    case K::ListLit:
      return ctx_.int_val(list_code(e->list));
    case K::BoolLit:
      return ctx_.bool_val(e->ivalue != 0);
    case K::Op: {
      // A closed slot (Concat's pieces) at its default literal leaves the function as it was.
      const auto& slots = attribute_slots(e->op);
      bool closed = false;
      for (std::size_t s = 0; s < slots.size(); ++s)
        if (slots[s].closed)
          closed = closed || e->attrs[s]->kind != K::IntLit ||
                   e->attrs[s]->ivalue != std::get<std::int64_t>(*slots[s].default_value);
      z3::expr_vector args(ctx_);
      for (std::size_t s = 0; s < slots.size(); ++s)
        if (closed || !slots[s].closed) args.push_back(encode(e->attrs[s], vars));
      for (std::size_t i = 0; i < e->args.size(); ++i) args.push_back(arg(i));
      return op_decl(e->op, static_cast<int>(e->args.size()), e->output, closed)(args);
    }
    case K::Ok:
      return ok_(arg(0));
    case K::Rank:
      return rank_(arg(0));
    case K::Degree:
      return degree_(arg(0), arg(1));
    case K::Replica:
      return replica_(arg(0));
    case K::Size:
      return size_(arg(0), arg(1));
    case K::Add:
      return arg(0) + arg(1);
    case K::Sub:
      return arg(0) - arg(1);
    case K::Mul:
      return arg(0) * arg(1);
    case K::Mod:
      return z3::mod(arg(0), arg(1));
    case K::ToReal:
      return z3::to_real(arg(0));
    case K::Lt:
      return arg(0) < arg(1);
    case K::Le:
      return arg(0) <= arg(1);
    case K::Eq:
      return arg(0) == arg(1);
    case K::Ne:
      return arg(0) != arg(1);
    case K::And:
      return arg(0) && arg(1);
    case K::Or:
      return arg(0) || arg(1);
    case K::Not:
      return !arg(0);
    case K::Ite:
      return z3::ite(arg(0), arg(1), arg(2));
    case K::Norm: {
      const z3::expr k = arg(0);
      return z3::ite(k < 0, k + arg(1), k);
    }
    case K::ListLen:
      return list_len_(arg(0));
    case K::ListAt:
      return list_at_(arg(0), arg(1));
    case K::PermPos:
      return perm_pos_(arg(0), arg(1));
    case K::Compose:
      return compose_(arg(0), arg(1));
    case K::Contains:
      return contains_(arg(0), arg(1));
    default:
      return count_below_(arg(0), arg(1));
  }
}

z3::expr Z3Encoder::forall(const std::vector<z3::expr>& bound,
                           const std::vector<std::vector<z3::expr>>& patterns,
                           const z3::expr& body) {
  if (bound.empty()) return body;
  std::vector<Z3_app> apps;
  for (const auto& b : bound) apps.push_back(Z3_to_app(ctx_, b));
  // The context counts references: a pattern must be held while the next ones are made.
  std::vector<Z3_pattern> pats;
  for (const auto& p : patterns) {
    std::vector<Z3_ast> terms;
    for (const auto& t : p) terms.push_back(t);
    pats.push_back(Z3_mk_pattern(ctx_, static_cast<unsigned>(terms.size()), terms.data()));
    Z3_inc_ref(ctx_, Z3_pattern_to_ast(ctx_, pats.back()));
  }
  Z3_ast q = Z3_mk_forall_const(ctx_, 0, static_cast<unsigned>(apps.size()), apps.data(),
                                static_cast<unsigned>(pats.size()), pats.data(), body);
  z3::expr result(ctx_, q);
  for (auto p : pats) Z3_dec_ref(ctx_, Z3_pattern_to_ast(ctx_, p));
  ctx_.check_error();
  return result;
}

z3::expr Z3Encoder::quantified(const std::map<std::string, Sort>& vars, const std::string& prefix,
                               const std::vector<std::vector<ExprPtr>>& patterns,
                               const ExprPtr& lhs, const ExprPtr& rhs, const ExprPtr& guard,
                               Axiom::Mode mode, bool is_fact, const ExprPtr& trigger) {
  std::map<std::string, z3::expr> env;
  std::vector<z3::expr> bound;
  for (const auto& [name, sort] : vars) {
    z3::expr c = ctx_.constant((prefix + "!" + name).c_str(), sort_of(sort));
    env.emplace(name, c);
    bound.push_back(c);
  }
  const z3::expr l = encode(lhs, env);
  z3::expr cond = guard ? encode(guard, env) : ctx_.bool_val(true);
  z3::expr body(ctx_);
  if (is_fact) {
    body = encode(rhs, env);
  } else {
    const z3::expr r = encode(rhs, env);
    switch (mode) {
      case Axiom::Mode::Forward:
        body = z3::implies(cond && ok_(l), l == r);
        break;
      case Axiom::Mode::Both:
        body = z3::implies(cond && (ok_(l) || ok_(r)), l == r);
        break;
      case Axiom::Mode::Joint:
        body = z3::implies(cond && ok_(l) && ok_(r), l == r);
        break;
      case Axiom::Mode::Trigger:
        body = z3::implies(cond && ok_(encode(trigger, env)), l == r);
        break;
    }
  }
  std::vector<std::vector<z3::expr>> pats;
  for (const auto& p : patterns) {
    std::vector<z3::expr> terms;
    for (const auto& t : p) terms.push_back(encode(t, env));
    pats.push_back(terms);
  }
  return forall(bound, pats, body);
}

std::vector<z3::expr> Z3Encoder::axiom_formulas(const std::vector<Axiom>& axioms) {
  std::vector<z3::expr> out;
  for (const auto& ax : axioms) {
    std::map<std::string, Sort> vars, lhs_vars, rhs_vars;
    const ExprPtr& first = ax.mode == Axiom::Mode::Trigger ? ax.trigger.ptr() : ax.lhs.ptr();
    collect_vars(first, lhs_vars);
    collect_vars(ax.rhs.ptr(), rhs_vars);
    vars = lhs_vars;
    vars.insert(rhs_vars.begin(), rhs_vars.end());
    collect_vars(ax.lhs.ptr(), vars);
    if (ax.guard) collect_vars(ax.guard.ptr(), vars);
    if (vars.size() != lhs_vars.size())
      throw std::logic_error("axiom " + ax.name + ": every variable must occur in its pattern");
    std::vector<std::vector<ExprPtr>> patterns = {{first}};
    const bool rhs_pattern =
        ax.rhs->kind == K::Op && is_pattern(ax.rhs.ptr()) && rhs_vars.size() == vars.size();
    if (ax.mode == Axiom::Mode::Both && rhs_pattern) patterns.push_back({ax.rhs.ptr()});
    if (ax.mode == Axiom::Mode::Joint && rhs_pattern) patterns = {{ax.lhs.ptr(), ax.rhs.ptr()}};
    out.push_back(quantified(vars, ax.name, patterns, ax.lhs.ptr(), ax.rhs.ptr(), ax.guard.ptr(),
                             ax.mode, false, ax.trigger.ptr()));
  }
  return out;
}

std::vector<z3::expr> Z3Encoder::fact_formulas(const std::vector<Fact>& facts) {
  std::vector<z3::expr> out;
  for (const auto& f : facts) {
    std::map<std::string, Sort> vars, all;
    collect_vars(f.trigger.ptr(), vars);
    std::vector<ExprPtr> pattern(f.trigger2 ? 2 : 1);
    pattern[0] = f.trigger.ptr();
    if (f.trigger2) {
      collect_vars(f.trigger2.ptr(), vars);
      pattern[1] = f.trigger2.ptr();
    }
    all = vars;
    collect_vars(f.holds.ptr(), all);
    if (all.size() != vars.size())
      throw std::logic_error("fact " + f.name + ": every variable must occur in its trigger");
    out.push_back(quantified(vars, f.name, {pattern}, f.trigger.ptr(), f.holds.ptr(), nullptr,
                             Axiom::Mode::Forward, true));
  }
  return out;
}

std::vector<z3::expr> Z3Encoder::theory_formulas(const Theory& theory) {
  std::vector<z3::expr> out = axiom_formulas(theory.axioms);
  for (auto& f : fact_formulas(theory.facts)) out.push_back(f);
  declare_common_operators();
  for (auto& s : new_strictness_formulas()) out.push_back(s);
  for (auto& f : query_list_facts()) out.push_back(f);
  base_codes_.insert(touched_.begin(), touched_.end());
  touched_.clear();
  theory_done_ = true;
  return out;
}

bool Z3Encoder::on_demand(OpType op) {
  if (declared_with_first_theory(op)) return false;
  const Theory& own = operator_theory(op);
  return !own.axioms.empty() || !own.facts.empty();
}

void Z3Encoder::declare_common_operators() {
  for (const auto& info : all_op_infos()) {
    // An operator asserted on demand is declared by the queries that name it, so that adding
    // one changes nothing in the others.
    if (is_source_op(info.type) || on_demand(info.type)) continue;
    const int outputs = info.type == OpType::Split ? 4 : 1;
    for (int arity = info.min_inputs; arity <= std::min(info.max_inputs, 4); ++arity)
      for (int o = 0; o < outputs; ++o) op_decl(info.type, arity, o);
  }
}

std::vector<z3::expr> Z3Encoder::query_strictness_formulas(const std::vector<OpType>& named) {
  for (auto& f : new_strictness_formulas()) query_strictness_.push_back(f);
  std::vector<z3::expr> out = query_strictness_;
  for (OpType op : named)
    if (auto it = on_demand_strictness_.find(op); it != on_demand_strictness_.end())
      out.insert(out.end(), it->second.begin(), it->second.end());
  return out;
}

std::vector<z3::expr> Z3Encoder::new_strictness_formulas() {
  std::vector<z3::expr> out;
  for (const auto& [f, key] : pending_strictness_) {
    const auto [op, arity] = key;
    std::vector<z3::expr> bound;
    z3::expr_vector args(ctx_);
    for (unsigned i = 0; i < f.arity(); ++i) {
      z3::expr v = ctx_.constant(fmt::format("{}!a{}", f.name().str(), i).c_str(), f.domain(i));
      bound.push_back(v);
      args.push_back(v);
    }
    const z3::expr app = f(args);
    z3::expr inputs_ok = ctx_.bool_val(true);
    for (unsigned i = f.arity() - static_cast<unsigned>(arity); i < f.arity(); ++i)
      inputs_ok = inputs_ok && ok_(args[static_cast<int>(i)]);
    const z3::expr strict = forall(bound, {{app}}, z3::implies(ok_(app), inputs_ok));
    if (on_demand(op))
      on_demand_strictness_[op].push_back(strict);  // for the queries that name the operator
    else
      out.push_back(strict);
  }
  pending_strictness_.clear();
  return out;
}

std::vector<z3::expr> Z3Encoder::facts_for(const std::set<int>& codes, const std::set<int>& known) {
  std::vector<z3::expr> out;
  // Close the permutations under composition with each other and with those already known.
  std::set<int> all = codes;
  for (int round = 0; round < 3; ++round) {
    std::vector<int> perms;
    for (int c : all)
      if (is_permutation(lists_[static_cast<std::size_t>(c - kFirstCode)])) perms.push_back(c);
    for (int c : known)
      if (is_permutation(lists_[static_cast<std::size_t>(c - kFirstCode)])) perms.push_back(c);
    const std::size_t before = all.size();
    for (int q : perms)
      for (int p : perms) {
        const auto& lq = lists_[static_cast<std::size_t>(q - kFirstCode)];
        const auto& lp = lists_[static_cast<std::size_t>(p - kFirstCode)];
        if (lq.size() != lp.size() || all.size() > 256) continue;
        std::vector<std::int64_t> r;
        for (auto i : lp) r.push_back(lq[static_cast<std::size_t>(i)]);
        const int code = list_code(r);
        if (!known.count(code)) all.insert(code);
      }
    if (all.size() == before) break;
  }
  for (int c : all) {
    if (known.count(c)) continue;
    const auto& l = lists_[static_cast<std::size_t>(c - kFirstCode)];
    const z3::expr code = ctx_.int_val(c);
    out.push_back(list_len_(code) == static_cast<int>(l.size()));
    for (std::size_t i = 0; i < l.size(); ++i)
      out.push_back(list_at_(code, ctx_.int_val(static_cast<int>(i))) ==
                    ctx_.int_val(static_cast<std::int64_t>(l[i])));
    const z3::expr k = ctx_.constant(fmt::format("list{}!k", c).c_str(), ctx_.int_sort());
    z3::expr member = ctx_.bool_val(false);
    z3::expr below = ctx_.int_val(0);
    z3::expr pos = ctx_.int_val(-1);
    for (std::size_t i = 0; i < l.size(); ++i) {
      const z3::expr v = ctx_.int_val(static_cast<std::int64_t>(l[i]));
      member = member || k == v;
      below = below + z3::ite(v < k, ctx_.int_val(1), ctx_.int_val(0));
      pos = z3::ite(k == v, ctx_.int_val(static_cast<int>(i)), pos);
    }
    out.push_back(forall({k}, {{contains_(code, k)}}, contains_(code, k) == member));
    out.push_back(forall({k}, {{count_below_(code, k)}}, count_below_(code, k) == below));
    out.push_back(forall({k}, {{perm_pos_(code, k)}}, perm_pos_(code, k) == pos));
  }
  std::set<int> perm_codes;
  for (int c : all)
    if (is_permutation(lists_[static_cast<std::size_t>(c - kFirstCode)])) perm_codes.insert(c);
  for (int c : known)
    if (is_permutation(lists_[static_cast<std::size_t>(c - kFirstCode)])) perm_codes.insert(c);
  for (int q : perm_codes)
    for (int p : perm_codes) {
      if (known.count(q) && known.count(p)) continue;  // stated with the theory
      const auto& lq = lists_[static_cast<std::size_t>(q - kFirstCode)];
      const auto& lp = lists_[static_cast<std::size_t>(p - kFirstCode)];
      if (lq.size() != lp.size()) continue;
      std::vector<std::int64_t> r;
      for (auto i : lp) r.push_back(lq[static_cast<std::size_t>(i)]);
      auto it = codes_.find(r);
      if (it == codes_.end()) continue;
      out.push_back(compose_(ctx_.int_val(q), ctx_.int_val(p)) == ctx_.int_val(it->second));
    }
  return out;
}

std::vector<z3::expr> Z3Encoder::query_list_facts() {
  const std::set<int> codes = touched_;
  return facts_for(codes, base_codes_);
}

}  // namespace unity::rules::spec
