#include <algorithm>
#include <functional>
#include <set>

#include "attribute_defaults.h"
#include "unity/core/rules/substitution.h"

namespace unity {
namespace {

nlohmann::json attr_json(const AttrValue& v) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}

class Matcher {
 public:
  Matcher(const Graph& g, const Rule& r) : g_(g), r_(r) {
    for (const auto& n : r.source.nodes)
      index_[n.name] = static_cast<int>(&n - r.source.nodes.data());
    std::set<std::string> outputs;
    for (const auto& o : r.source.outputs) outputs.insert(rule_ref(o).name);
    for (const auto& n : r.source.nodes)
      if (!outputs.count(n.name)) inner_.insert(n.name);
  }

  std::vector<Match> run() {
    Match m;
    m.rule = &r_;
    assign(static_cast<int>(r_.source.nodes.size()) - 1, m);
    return std::move(found_);
  }

 private:
  bool attrs_match(const RuleNode& p, const Node& n, Match& m) const {
    for (const auto& [key, a] : p.attrs) {
      std::optional<AttrValue> value;
      if (n.op.attrs.has(key))
        value = n.op.attrs.items().at(key);
      else
        value = detail::attribute_default(n.op, key,
                                          n.inputs.empty() ? nullptr : &g_.shape(n.inputs[0]));
      if (!value) return false;
      if (a.kind == RuleAttr::Kind::Literal) {
        if (attr_json(*value) != a.literal) return false;
      } else if (a.kind == RuleAttr::Kind::Symbol) {
        auto it = m.symbols.find(a.name);
        if (it == m.symbols.end())
          m.symbols[a.name] = *value;
        else if (it->second != *value)
          return false;
      } else {
        return false;  // parameters belong to targets
      }
    }
    for (const auto& [key, value] : n.op.attrs.items())
      if (detail::pattern_must_name(key) && !p.attrs.count(key) &&
          detail::attribute_default(key) != value)
        return false;
    return true;
  }

  // Patterns are matched from their last node back; a node read by an already matched node is fixed
  // by that edge, any other node is tried against every graph node of its type.
  void assign(int i, Match& m) {
    if (i < 0) {
      finish(m);
      return;
    }
    const RuleNode& p = r_.source.nodes[i];
    auto fixed = m.nodes.find(p.name);
    if (fixed != m.nodes.end()) {
      try_node(i, fixed->second, m);
      return;
    }
    for (const auto& [id, n] : g_.nodes())
      if (n.op.type == p.op) try_node(i, id, m);
  }

  void try_node(int i, NodeId id, Match& m) {
    const RuleNode& p = r_.source.nodes[i];
    const Node& n = g_.node(id);
    const bool variadic = !p.inputs.empty() && is_variadic_ref(p.inputs.back());
    const std::size_t fixed = variadic ? p.inputs.size() - 1 : p.inputs.size();
    if (n.op.type != p.op) return;
    if (variadic ? n.inputs.size() < p.inputs.size() : n.inputs.size() != p.inputs.size()) return;
    for (const auto& [name, other] : m.nodes)
      if (other == id && name != p.name) return;  // one graph node per pattern node
    Match saved = m;
    m.nodes[p.name] = id;
    bool ok = attrs_match(p, n, m);
    if (ok && variadic) {
      const std::vector<TensorRef> tail(n.inputs.begin() + static_cast<std::ptrdiff_t>(fixed),
                                        n.inputs.end());
      if (bound_variadic_ && m.variadic != tail) ok = false;
      m.variadic = tail;
    }
    const bool was_bound = bound_variadic_;
    if (variadic) bound_variadic_ = true;
    for (std::size_t s = 0; ok && s < fixed; ++s) {
      const auto [ref, index] = rule_ref(p.inputs[s]);
      const TensorRef actual = n.inputs[s];
      if (index_.count(ref)) {
        if (actual.index != index) ok = false;
        auto it = m.nodes.find(ref);
        if (it == m.nodes.end())
          m.nodes[ref] = actual.node;
        else if (it->second != actual.node)
          ok = false;
      } else {
        auto it = m.inputs.find(ref);
        if (it == m.inputs.end())
          m.inputs[ref] = actual;
        else if (it->second != actual)
          ok = false;
      }
    }
    if (ok) assign(i - 1, m);
    bound_variadic_ = was_bound;
    m = std::move(saved);
  }

  void finish(const Match& m) {
    std::set<NodeId> matched;
    for (const auto& [name, id] : m.nodes) matched.insert(id);
    if (matched.size() != m.nodes.size()) return;
    for (const auto& [name, id] : m.nodes) {
      if (!inner_.count(name)) continue;
      for (const auto& use : g_.uses(id))
        if (!matched.count(use.node)) return;  // an inner result is needed elsewhere
    }
    // A rule input bound to a matched node's output would make the pattern read itself.
    for (const auto& [name, t] : m.inputs)
      if (matched.count(t.node)) return;
    for (const auto& t : m.variadic)
      if (matched.count(t.node)) return;
    found_.push_back(m);
  }

  const Graph& g_;
  const Rule& r_;
  std::map<std::string, int> index_;
  std::set<std::string> inner_;
  std::vector<Match> found_;
  bool bound_variadic_ = false;
};

}  // namespace

std::vector<NodeId> Match::matched_nodes() const {
  std::vector<NodeId> out;
  for (const auto& [name, id] : nodes) out.push_back(id);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Match> find_matches(const Graph& graph, const Rule& rule) {
  std::vector<Match> found = Matcher(graph, rule).run();
  if (rule.proved.bounded())
    std::erase_if(found, [](const Match& m) { return !within_proved_scope(m); });
  return found;
}

}  // namespace unity
