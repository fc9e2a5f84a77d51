#include "spec_eval.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attribute_schema.h"
#include "unity/rules/evaluator.h"

namespace unity::rules::spec {
namespace {

using K = Expr::Kind;

const std::vector<std::int64_t>& as_list(const Concrete& c) {
  return std::get<std::vector<std::int64_t>>(c);
}

double as_real(const Concrete& c) {
  if (const auto* i = std::get_if<std::int64_t>(&c)) return static_cast<double>(*i);
  return std::get<double>(c);
}

}  // namespace

std::int64_t as_int(const Concrete& c) { return std::get<std::int64_t>(c); }
bool as_bool(const Concrete& c) { return std::get<bool>(c); }

std::string to_string(const Concrete& c) {
  struct V {
    std::string operator()(std::monostate) const { return "undefined"; }
    std::string operator()(const ParallelValue& v) const { return v.describe(); }
    std::string operator()(std::int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return fmt::format("{}", v); }
    std::string operator()(const std::vector<std::int64_t>& v) const { return fmt::format("[{}]", fmt::join(v, ", ")); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
  };
  return std::visit(V{}, c);
}

Concrete SpecEvaluator::var(const Expr& e, OpType op, int slot,
                            const std::vector<const ParallelValue*>& inputs, const Attributes& earlier) {
  auto it = env_.find(e.name);
  if (it != env_.end()) return it->second;
  if (binder_)
    if (auto v = binder_(e, op, slot, inputs, earlier)) {
      env_[e.name] = *v;
      return *v;
    }
  throw std::logic_error("unbound variable " + e.name);
}

std::optional<Operator> SpecEvaluator::to_operator(const Expr& app,
                                                   const std::vector<const ParallelValue*>& inputs) {
  Operator op;
  op.type = app.op;
  const auto& slots = attribute_slots(app.op);
  for (std::size_t s = 0; s < slots.size(); ++s) {
    const ExprPtr& a = app.attrs[s];
    const Concrete v = a->kind == K::Var ? var(*a, app.op, static_cast<int>(s), inputs, op.attrs) : eval(a);
    switch (slots[s].kind) {
      case AttrKind::Int:
        op.attrs.set(slots[s].name, as_int(v));
        break;
      case AttrKind::Real:
        op.attrs.set(slots[s].name, as_real(v));
        break;
      case AttrKind::Enum:
        op.attrs.set(slots[s].name, enum_name(slots[s], as_int(v)));
        break;
      case AttrKind::List:
        op.attrs.set(slots[s].name, as_list(v));
        break;
    }
  }
  return op;
}

Concrete SpecEvaluator::eval(const ExprPtr& e) {
  auto arg = [&](std::size_t i) { return eval(e->args[i]); };
  auto iarg = [&](std::size_t i) { return as_int(eval(e->args[i])); };
  switch (e->kind) {
    case K::Var:
      return var(*e, OpType::Identity, -1, {});
    case K::IntLit:
      return e->ivalue;
    case K::RealLit:
      return e->rvalue;
    case K::ListLit:
      return e->list;
    case K::BoolLit:
      return e->ivalue != 0;
    case K::Op: {
      std::vector<Concrete> values;
      for (const auto& a : e->args) {
        Concrete v = a->kind == K::Var ? var(*a, e->op, -1, {}) : eval(a);
        if (std::holds_alternative<std::monostate>(v)) {
          if (error_.empty()) error_ = "an input is undefined";
          return std::monostate{};
        }
        values.push_back(std::move(v));
      }
      std::vector<const ParallelValue*> inputs;
      for (const auto& v : values) inputs.push_back(&std::get<ParallelValue>(v));
      const auto op = to_operator(*e, inputs);
      auto r = evaluate(*op, inputs);
      if (!r.ok() || e->output >= static_cast<int>(r.outputs.size())) {
        error_ = fmt::format("{}: {}", unity::to_string(e->op), r.ok() ? "no such output" : r.error);
        return std::monostate{};
      }
      return std::move(r.outputs[static_cast<std::size_t>(e->output)]);
    }
    case K::Ok:
      return !std::holds_alternative<std::monostate>(arg(0));
    case K::Rank:
    case K::Degree:
    case K::Replica:
    case K::Size: {
      const Concrete t = arg(0);
      const auto* v = std::get_if<ParallelValue>(&t);
      if (!v) return std::int64_t{0};
      if (e->kind == K::Rank) return std::int64_t{v->shape.rank()};
      if (e->kind == K::Replica) return std::int64_t{v->shape.replica};
      const std::int64_t i = iarg(1);
      if (i < 0 || i >= v->shape.rank()) return std::int64_t{0};
      const auto& dim = v->shape.dims[static_cast<std::size_t>(i)];
      return e->kind == K::Degree ? std::int64_t{dim.degree} : dim.size;
    }
    case K::Add:
    case K::Sub:
    case K::Mul: {
      const Concrete a = arg(0), b = arg(1);
      if (e->sort == Sort::Real) {
        const double x = as_real(a), y = as_real(b);
        return e->kind == K::Add ? x + y : e->kind == K::Sub ? x - y : x * y;
      }
      const std::int64_t x = as_int(a), y = as_int(b);
      return e->kind == K::Add ? x + y : e->kind == K::Sub ? x - y : x * y;
    }
    case K::Mod: {
      const std::int64_t a = iarg(0), m = iarg(1);
      if (m == 0) return a;
      return ((a % m) + m) % m;
    }
    case K::ToReal:
      return as_real(arg(0));
    case K::Lt:
    case K::Le:
    case K::Eq:
    case K::Ne: {
      const Concrete a = arg(0), b = arg(1);
      if (std::holds_alternative<double>(a) || std::holds_alternative<double>(b)) {
        const double x = as_real(a), y = as_real(b);
        switch (e->kind) {
          case K::Lt: return x < y;
          case K::Le: return x <= y;
          case K::Eq: return x == y;
          default: return x != y;
        }
      }
      if (std::holds_alternative<std::vector<std::int64_t>>(a)) {
        const bool eq = as_list(a) == as_list(b);
        return e->kind == K::Eq ? eq : !eq;
      }
      const std::int64_t x = as_int(a), y = as_int(b);
      switch (e->kind) {
        case K::Lt: return x < y;
        case K::Le: return x <= y;
        case K::Eq: return x == y;
        default: return x != y;
      }
    }
    case K::And:
      return as_bool(arg(0)) && as_bool(arg(1));
    case K::Or:
      return as_bool(arg(0)) || as_bool(arg(1));
    case K::Not:
      return !as_bool(arg(0));
    case K::Ite:
      return as_bool(arg(0)) ? arg(1) : arg(2);
    case K::Norm: {
      const std::int64_t k = iarg(0);
      return k < 0 ? k + iarg(1) : k;
    }
    case K::ListLen:
      return static_cast<std::int64_t>(as_list(arg(0)).size());
    case K::ListAt: {
      const auto l = as_list(arg(0));
      const std::int64_t i = iarg(1);
      return i >= 0 && i < static_cast<std::int64_t>(l.size()) ? l[static_cast<std::size_t>(i)] : std::int64_t{0};
    }
    case K::PermPos: {
      const auto l = as_list(arg(0));
      const std::int64_t k = iarg(1);
      for (std::size_t i = 0; i < l.size(); ++i)
        if (l[i] == k) return static_cast<std::int64_t>(i);
      return std::int64_t{-1};
    }
    case K::Compose: {
      const auto q = as_list(arg(0)), p = as_list(arg(1));
      std::vector<std::int64_t> r;
      for (auto i : p) r.push_back(i >= 0 && i < static_cast<std::int64_t>(q.size()) ? q[static_cast<std::size_t>(i)] : 0);
      return r;
    }
    case K::Contains: {
      const auto l = as_list(arg(0));
      return std::find(l.begin(), l.end(), iarg(1)) != l.end();
    }
    default: {
      const auto l = as_list(arg(0));
      const std::int64_t k = iarg(1);
      return static_cast<std::int64_t>(std::count_if(l.begin(), l.end(), [&](auto v) { return v < k; }));
    }
  }
}

}  // namespace unity::rules::spec
