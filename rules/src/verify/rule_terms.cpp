#include "rule_terms.h"

#include <cmath>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "attribute_schema.h"

namespace unity::rules::spec {
namespace {

struct Invalid : std::runtime_error {
  using std::runtime_error::runtime_error;
};

Sort sort_of(AttrKind k) {
  switch (k) {
    case AttrKind::Real:
      return Sort::Real;
    case AttrKind::List:
      return Sort::List;
    default:
      return Sort::Int;
  }
}

E var_of(const std::string& name, Sort s) {
  switch (s) {
    case Sort::Real:
      return rvar(name);
    case Sort::List:
      return lvar(name);
    default:
      return ivar(name);
  }
}

E literal(OpType op, const AttrSlot& slot, const nlohmann::json& j, const std::string& where) {
  switch (slot.kind) {
    case AttrKind::Int:
      if (j.is_number_integer()) return ilit(j.get<std::int64_t>());
      if (j.is_number_float() && std::floor(j.get<double>()) == j.get<double>())
        return ilit(static_cast<std::int64_t>(j.get<double>()));
      break;
    case AttrKind::Real:
      if (j.is_number()) return rlit(j.get<double>());
      break;
    case AttrKind::Enum:
      if (j.is_string()) return ilit(enum_code(slot, j.get<std::string>()));
      break;
    case AttrKind::List:
      if (j.is_array()) {
        std::vector<std::int64_t> v;
        for (const auto& x : j) {
          if (!x.is_number_integer()) throw Invalid(where + ": a list of integers expected");
          v.push_back(x.get<std::int64_t>());
        }
        return llit(normalized_list(op, slot.name, v));
      }
      break;
  }
  throw Invalid(fmt::format("{}: {} is not a valid '{}'", where, j.dump(), slot.name));
}

E with_output(const E& node, int output) {
  if (output == 0) return node;
  auto e = std::make_shared<Expr>(*node.ptr());
  e->output = output;
  return E(std::move(e));
}

class Builder {
 public:
  explicit Builder(const Rule& r) : rule_(r) {}

  RuleTerms build() {
    RuleTerms t;
    try {
      for (const auto& in : rule_.inputs) t.inputs[in] = tvar(in);
      for (const auto& p : rule_.parameters) param_names_.insert(p);
      for (const auto& n : rule_.source.nodes) {
        source_attrs_[n.name] = source_attributes(n);
        built_[n.name] = app(n.op, source_attrs_[n.name], args(n, t), 0);
        t.source_nodes[n.name] = built_[n.name];
        add_node_terms(n, t);
      }
      for (const auto& n : rule_.target.nodes) {
        target_built_[n.name] = app(n.op, target_attributes(n), target_args(n, t), 0);
        add_node_terms(n, t, true);
      }
      for (const auto& o : rule_.source.outputs) t.source_outputs.push_back(resolve(o, t, false));
      for (const auto& o : rule_.target.outputs) t.target_outputs.push_back(resolve(o, t, true));
      premises(t);
    } catch (const Invalid& e) {
      t.error = e.what();
    } catch (const std::logic_error& e) {
      t.error = e.what();
    }
    return t;
  }

 private:
  std::map<std::string, E> source_attributes(const RuleNode& n) {
    std::map<std::string, E> attrs;
    for (const auto& slot : attribute_slots(n.op)) {
      auto it = n.attrs.find(slot.name);
      const std::string where = fmt::format("source node '{}' attribute '{}'", n.name, slot.name);
      if (it == n.attrs.end() && slot.closed) {
        attrs[slot.name] = ilit(std::get<std::int64_t>(*slot.default_value));
        continue;
      }
      if (it == n.attrs.end()) {
        // Left open: any value the matched node holds.
        attrs[slot.name] = var_of(fmt::format("src.{}.{}", n.name, slot.name), sort_of(slot.kind));
        continue;
      }
      const RuleAttr& a = it->second;
      if (a.kind == RuleAttr::Kind::Literal)
        attrs[slot.name] = literal(n.op, slot, a.literal, where);
      else if (a.kind == RuleAttr::Kind::Symbol)
        attrs[slot.name] = symbol(a.name, slot, where);
      else
        throw Invalid(where + ": parameters belong to targets");
    }
    return attrs;
  }

  std::map<std::string, E> target_attributes(const RuleNode& n) {
    std::map<std::string, E> attrs;
    if (!n.copy_of.empty()) {
      const RuleNode* src = nullptr;
      for (const auto& s : rule_.source.nodes)
        if (s.name == n.copy_of) src = &s;
      if (!src || src->op != n.op) {
        // Copying across operator types keeps only the attributes both have.
        if (src)
          for (const auto& slot : attribute_slots(n.op))
            if (slot_index(src->op, slot.name) >= 0 &&
                attribute_slots(src->op)[static_cast<std::size_t>(slot_index(src->op, slot.name))]
                        .kind == slot.kind)
              attrs[slot.name] = source_attrs_.at(src->name).at(slot.name);
      } else {
        attrs = source_attrs_.at(src->name);
      }
    }
    for (const auto& slot : attribute_slots(n.op)) {
      const std::string where = fmt::format("target node '{}' attribute '{}'", n.name, slot.name);
      auto it = n.attrs.find(slot.name);
      if (it != n.attrs.end()) {
        const RuleAttr& a = it->second;
        if (a.kind == RuleAttr::Kind::Literal)
          attrs[slot.name] = literal(n.op, slot, a.literal, where);
        else if (a.kind == RuleAttr::Kind::Symbol)
          attrs[slot.name] = symbol(a.name, slot, where);
        else
          attrs[slot.name] = parameter(a.name, slot, where);
      } else if (!attrs.count(slot.name) && !slot.default_value && slot.default_from.empty()) {
        throw Invalid(where + " is missing and has no default: the target can never be built");
      }
    }
    return attrs;
  }

  E symbol(const std::string& name, const AttrSlot& slot, const std::string& where) {
    const Sort s = sort_of(slot.kind);
    auto it = symbol_sorts_.find(name);
    if (it != symbol_sorts_.end() && it->second != s)
      throw Invalid(where + ": $" + name + " stands for values of different kinds");
    symbol_sorts_[name] = s;
    if (slot.name == "degree") degree_symbols_.insert(name);
    return var_of(symbol_var(name), s);
  }

  E parameter(const std::string& name, const AttrSlot& slot, const std::string& where) {
    if (slot.kind != AttrKind::Int)
      throw Invalid(where + ": parameter '" + name + "' is an integer");
    used_params_[name] = slot.name;
    return ivar(parameter_var(name));
  }

  std::vector<E> args(const RuleNode& n, RuleTerms& t) {
    std::vector<E> out;
    for (const auto& in : n.inputs) out.push_back(resolve(in, t, false));
    return out;
  }
  std::vector<E> target_args(const RuleNode& n, RuleTerms& t) {
    std::vector<E> out;
    for (const auto& in : n.inputs) out.push_back(resolve(in, t, true));
    return out;
  }

  E resolve(const std::string& ref, RuleTerms& t, bool target) {
    const auto [name, index] = rule_ref(ref);
    const auto& built = target ? target_built_ : built_;
    if (auto it = built.find(name); it != built.end()) return with_output(it->second, index);
    if (auto it = t.inputs.find(name); it != t.inputs.end()) return it->second;
    throw Invalid("'" + ref + "' names nothing");
  }

  // Every output of a node a rule reads or returns, for the premise that all are defined.
  void add_node_terms(const RuleNode& n, RuleTerms& t, bool target = false) {
    const E& node = (target ? target_built_ : built_).at(n.name);
    std::set<int> outputs = {0};
    auto scan = [&](const RuleGraph& g) {
      for (const auto& m : g.nodes)
        for (const auto& in : m.inputs)
          if (rule_ref(in).name == n.name) outputs.insert(rule_ref(in).output);
      for (const auto& o : g.outputs)
        if (rule_ref(o).name == n.name) outputs.insert(rule_ref(o).output);
    };
    scan(target ? rule_.target : rule_.source);
    for (int o : outputs) t.nodes.push_back(with_output(node, o));
  }

  // Mirrors the core's constraint operands: sums and differences of integers, $symbols, parameters
  // and rank/last/replica/size/degree of a rule input or source node.
  E operand(const std::string& text, RuleTerms& t) {
    int depth = 0;
    for (std::size_t i = text.size(); i-- > 1;) {
      const char c = text[i];
      if (c == ')') ++depth;
      if (c == '(') --depth;
      if (depth == 0 && (c == '+' || c == '-')) {
        const E a = operand(text.substr(0, i), t), b = term(text.substr(i + 1), t);
        return c == '+' ? a + b : a - b;
      }
    }
    return term(text, t);
  }

  E term(const std::string& s, RuleTerms& t) {
    if (s.empty()) throw Invalid("empty constraint operand");
    if (s[0] == '$') {
      auto it = symbol_sorts_.find(s.substr(1));
      if (it == symbol_sorts_.end() || it->second != Sort::Int)
        throw Invalid("constraint operand " + s + " is not an integer symbol");
      return ivar(symbol_var(s.substr(1)));
    }
    if (s.find('(') == std::string::npos) {
      if (param_names_.count(s)) return ivar(parameter_var(s));
      try {
        std::size_t used = 0;
        const long long v = std::stoll(s, &used);
        if (used == s.size()) return ilit(v);
      } catch (const std::exception&) {
      }
      throw Invalid("constraint operand '" + s + "' is not an integer, symbol or parameter");
    }
    const std::string fn = s.substr(0, s.find('('));
    const std::string args = s.substr(s.find('(') + 1, s.size() - s.find('(') - 2);
    const std::string tensor = args.substr(0, args.find(','));
    E te;
    if (auto it = t.inputs.find(tensor); it != t.inputs.end())
      te = it->second;
    else if (auto b = built_.find(tensor); b != built_.end())
      te = b->second;
    else
      throw Invalid("constraint operand '" + s + "' names no rule input or source node");
    if (fn == "rank") return rank(te);
    if (fn == "last") return rank(te) - 1;
    if (fn == "replica") return replica(te);
    if (args.find(',') == std::string::npos)
      throw Invalid("constraint operand '" + s + "' needs a dim");
    const E k = operand(args.substr(args.find(',') + 1), t);
    const E nk = norm(k, rank(te));
    if (fn == "size") return size(te, nk);
    if (fn == "degree") return degree(te, nk);
    throw Invalid("unknown function in constraint operand '" + s + "'");
  }

  void premises(RuleTerms& t) {
    for (const auto& name : degree_symbols_) {
      t.premises.push_back(ivar(symbol_var(name)) >= 1);
      t.degree_vars.push_back(symbol_var(name));
    }
    for (const auto& p : rule_.parameter_domains) {
      const E v = ivar(parameter_var(p.name));
      if (p.domain == RuleParameter::Domain::Dim) {
        E of = t.inputs.count(p.of) ? t.inputs.at(p.of) : built_.at(p.of);
        t.premises.push_back(ilit(0) <= v && v < rank(of));
      } else {
        t.premises.push_back(v >= 2);  // the search's degrees: divisors of the device count above 1
        t.degree_vars.push_back(parameter_var(p.name));
      }
    }
    for (const auto& c : rule_.constraints) {
      const E a = operand(c.a, t), b = operand(c.b, t);
      switch (c.kind) {
        case RuleConstraint::Kind::Equal:
          t.premises.push_back(a == b);
          break;
        case RuleConstraint::Kind::NotEqual:
          t.premises.push_back(a != b);
          break;
        case RuleConstraint::Kind::Divides:
          t.premises.push_back(a != 0 && b % a == 0);
          break;
        case RuleConstraint::Kind::Less:
          t.premises.push_back(a < b);
          break;
      }
    }
  }

  const Rule& rule_;
  std::set<std::string> param_names_;
  std::map<std::string, std::map<std::string, E>> source_attrs_;
  std::map<std::string, E> built_, target_built_;
  std::map<std::string, Sort> symbol_sorts_;
  std::set<std::string> degree_symbols_;
  std::map<std::string, std::string> used_params_;
};

}  // namespace

std::string parameter_var(const std::string& name) { return "param." + name; }
std::string symbol_var(const std::string& name) { return "$" + name; }

RuleTerms rule_terms(const Rule& rule) { return Builder(rule).build(); }

}  // namespace unity::rules::spec
