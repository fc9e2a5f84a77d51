#include "spec_expr.h"

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attribute_schema.h"

namespace unity::rules::spec {
namespace {

using K = Expr::Kind;

E make(K kind, Sort sort, std::vector<ExprPtr> args = {}) {
  auto e = std::make_shared<Expr>();
  e->kind = kind;
  e->sort = sort;
  e->args = std::move(args);
  return E(std::move(e));
}

E var(const std::string& name, Sort sort) {
  auto e = std::make_shared<Expr>();
  e->kind = K::Var;
  e->sort = sort;
  e->name = name;
  return E(std::move(e));
}

Sort arith_sort(const E& a, const E& b) {
  if (a->sort != b->sort) throw std::logic_error("arithmetic on different sorts: " + to_string(a.ptr()) + ", " + to_string(b.ptr()));
  return a->sort;
}

E literal_for(const AttrSlot& slot, const AttrValue& v) {
  switch (slot.kind) {
    case AttrKind::Int:
      return ilit(std::get<std::int64_t>(v));
    case AttrKind::Real:
      return rlit(std::get<double>(v));
    case AttrKind::Enum:
      return ilit(enum_code(slot, std::get<std::string>(v)));
    default:
      return llit(std::get<std::vector<std::int64_t>>(v));
  }
}

}  // namespace

E::E(int v) : E(ilit(v)) {}

E tvar(const std::string& name) { return var(name, Sort::Tensor); }
E ivar(const std::string& name) { return var(name, Sort::Int); }
E rvar(const std::string& name) { return var(name, Sort::Real); }
E lvar(const std::string& name) { return var(name, Sort::List); }

E ilit(std::int64_t v) {
  auto e = std::make_shared<Expr>();
  e->kind = K::IntLit;
  e->sort = Sort::Int;
  e->ivalue = v;
  return E(std::move(e));
}

E rlit(double v) {
  auto e = std::make_shared<Expr>();
  e->kind = K::RealLit;
  e->sort = Sort::Real;
  e->rvalue = v;
  return E(std::move(e));
}

E llit(std::vector<std::int64_t> v) {
  auto e = std::make_shared<Expr>();
  e->kind = K::ListLit;
  e->sort = Sort::List;
  e->list = std::move(v);
  return E(std::move(e));
}

E blit(bool v) {
  auto e = std::make_shared<Expr>();
  e->kind = K::BoolLit;
  e->sort = Sort::Bool;
  e->ivalue = v;
  return E(std::move(e));
}

E operator+(const E& a, const E& b) { return make(K::Add, arith_sort(a, b), {a.ptr(), b.ptr()}); }
E operator-(const E& a, const E& b) { return make(K::Sub, arith_sort(a, b), {a.ptr(), b.ptr()}); }
E operator-(const E& a) { return ilit(0) - a; }
E operator*(const E& a, const E& b) { return make(K::Mul, arith_sort(a, b), {a.ptr(), b.ptr()}); }
E operator%(const E& a, const E& b) { return make(K::Mod, Sort::Int, {a.ptr(), b.ptr()}); }
E operator<(const E& a, const E& b) { return make(K::Lt, Sort::Bool, {a.ptr(), b.ptr()}); }
E operator<=(const E& a, const E& b) { return make(K::Le, Sort::Bool, {a.ptr(), b.ptr()}); }
E operator>(const E& a, const E& b) { return b < a; }
E operator>=(const E& a, const E& b) { return b <= a; }
E operator==(const E& a, const E& b) { return make(K::Eq, Sort::Bool, {a.ptr(), b.ptr()}); }
E operator!=(const E& a, const E& b) { return make(K::Ne, Sort::Bool, {a.ptr(), b.ptr()}); }
E operator&&(const E& a, const E& b) { return make(K::And, Sort::Bool, {a.ptr(), b.ptr()}); }
E operator||(const E& a, const E& b) { return make(K::Or, Sort::Bool, {a.ptr(), b.ptr()}); }
E operator!(const E& a) { return make(K::Not, Sort::Bool, {a.ptr()}); }
E ite(const E& c, const E& a, const E& b) { return make(K::Ite, arith_sort(a, b), {c.ptr(), a.ptr(), b.ptr()}); }
E to_real(const E& a) { return make(K::ToReal, Sort::Real, {a.ptr()}); }

E ok(const E& t) { return make(K::Ok, Sort::Bool, {t.ptr()}); }
E rank(const E& t) { return make(K::Rank, Sort::Int, {t.ptr()}); }
E degree(const E& t, const E& i) { return make(K::Degree, Sort::Int, {t.ptr(), i.ptr()}); }
E replica(const E& t) { return make(K::Replica, Sort::Int, {t.ptr()}); }
E size(const E& t, const E& i) { return make(K::Size, Sort::Int, {t.ptr(), i.ptr()}); }
E norm(const E& k, const E& r) { return make(K::Norm, Sort::Int, {k.ptr(), r.ptr()}); }
E list_len(const E& l) { return make(K::ListLen, Sort::Int, {l.ptr()}); }
E list_at(const E& l, const E& i) { return make(K::ListAt, Sort::Int, {l.ptr(), i.ptr()}); }
E perm_pos(const E& p, const E& k) { return make(K::PermPos, Sort::Int, {p.ptr(), k.ptr()}); }
E compose(const E& q, const E& p) { return make(K::Compose, Sort::List, {q.ptr(), p.ptr()}); }
E contains(const E& l, const E& k) { return make(K::Contains, Sort::Bool, {l.ptr(), k.ptr()}); }
E count_below(const E& l, const E& k) { return make(K::CountBelow, Sort::Int, {l.ptr(), k.ptr()}); }

E app(OpType op, const std::map<std::string, E>& attrs, const std::vector<E>& args, int output) {
  auto e = std::make_shared<Expr>();
  e->kind = K::Op;
  e->sort = Sort::Tensor;
  e->op = op;
  e->output = output;
  const auto& slots = attribute_slots(op);
  for (const auto& [name, value] : attrs)
    if (slot_index(op, name) < 0)
      throw std::logic_error(fmt::format("{} has no attribute '{}'", to_string(op), name));
  for (const auto& slot : slots) {
    auto it = attrs.find(slot.name);
    if (it != attrs.end()) {
      e->attrs.push_back(it->second.ptr());
    } else if (!slot.default_from.empty()) {
      e->attrs.push_back(attrs.at(slot.default_from).ptr());
    } else if (slot.default_value) {
      e->attrs.push_back(literal_for(slot, *slot.default_value).ptr());
    } else {
      throw std::logic_error(fmt::format("{} needs attribute '{}'", to_string(op), slot.name));
    }
  }
  for (const auto& a : args) e->args.push_back(a.ptr());
  return E(std::move(e));
}

void collect_vars(const ExprPtr& e, std::map<std::string, Sort>& out) {
  if (e->kind == K::Var) out[e->name] = e->sort;
  for (const auto& a : e->attrs) collect_vars(a, out);
  for (const auto& a : e->args) collect_vars(a, out);
}

std::string to_string(const ExprPtr& e) {
  switch (e->kind) {
    case K::Var:
      return e->name;
    case K::IntLit:
      return std::to_string(e->ivalue);
    case K::RealLit:
      return fmt::format("{}", e->rvalue);
    case K::ListLit:
      return fmt::format("[{}]", fmt::join(e->list, ","));
    case K::BoolLit:
      return e->ivalue ? "true" : "false";
    case K::Op: {
      std::vector<std::string> parts;
      const auto& slots = attribute_slots(e->op);
      for (std::size_t i = 0; i < e->attrs.size(); ++i)
        parts.push_back(slots[i].name + "=" + to_string(e->attrs[i]));
      std::vector<std::string> args;
      for (const auto& a : e->args) args.push_back(to_string(a));
      std::string name(unity::to_string(e->op));
      if (e->output) name += fmt::format(":{}", e->output);
      if (!parts.empty()) name += fmt::format("[{}]", fmt::join(parts, ","));
      return fmt::format("{}({})", name, fmt::join(args, ", "));
    }
    default: {
      static const std::map<K, const char*> names = {
          {K::Ok, "ok"}, {K::Rank, "rank"},       {K::Degree, "degree"},   {K::Replica, "replica"},
          {K::Size, "size"},       {K::Add, "+"},           {K::Sub, "-"},
          {K::Mul, "*"}, {K::Mod, "mod"},           {K::ToReal, "real"},     {K::Lt, "<"},
          {K::Le, "<="},           {K::Eq, "=="},           {K::Ne, "!="},
          {K::And, "and"},         {K::Or, "or"},           {K::Not, "not"},
          {K::Ite, "ite"},         {K::Norm, "norm"},       {K::ListLen, "len"},
          {K::ListAt, "at"},       {K::PermPos, "perm_pos"}, {K::Compose, "compose"},
          {K::Contains, "contains"}, {K::CountBelow, "count_below"}};
      std::vector<std::string> args;
      for (const auto& a : e->args) args.push_back(to_string(a));
      return fmt::format("{}({})", names.at(e->kind), fmt::join(args, ", "));
    }
  }
}

}  // namespace unity::rules::spec
