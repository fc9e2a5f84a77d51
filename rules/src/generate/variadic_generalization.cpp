#include "variadic_generalization.h"

#include <algorithm>

namespace unity::rules::gen {
namespace {

int uses(const RuleGraph& g, const std::string& name) {
  int n = 0;
  for (const auto& node : g.nodes)
    for (const auto& in : node.inputs) n += in == name;
  for (const auto& o : g.outputs) n += o == name;
  return n;
}

bool same_operation(const RuleNode& a, const RuleNode& b) {
  if (a.op != b.op || a.copy_of != b.copy_of || a.attrs.size() != b.attrs.size() || a.inputs.size() != 1 ||
      b.inputs.size() != 1)
    return false;
  for (const auto& [k, v] : a.attrs) {
    auto it = b.attrs.find(k);
    if (it == b.attrs.end() || it->second.kind != v.kind || it->second.name != v.name || it->second.literal != v.literal)
      return false;
  }
  return true;
}

}  // namespace

std::optional<Rule> variadic_concat(const Rule& rule) {
  // The source: one Concat of two distinct rule inputs read nowhere else.
  const RuleNode* cs = nullptr;
  for (const auto& n : rule.source.nodes)
    if (n.op == OpType::Concat) {
      if (cs) return std::nullopt;
      cs = &n;
    }
  if (!cs || cs->inputs.size() != 2 || cs->inputs[0] == cs->inputs[1]) return std::nullopt;
  const std::string i1 = cs->inputs[0], i2 = cs->inputs[1];
  for (const auto& i : {i1, i2}) {
    if (std::find(rule.inputs.begin(), rule.inputs.end(), i) == rule.inputs.end()) return std::nullopt;
    if (uses(rule.source, i) != 1) return std::nullopt;
  }
  for (const auto& c : rule.constraints)
    for (const auto& i : {i1, i2})
      if (c.a.find(i) != std::string::npos || c.b.find(i) != std::string::npos) return std::nullopt;

  Rule r = rule;
  r.inputs.erase(std::remove_if(r.inputs.begin(), r.inputs.end(), [&](const std::string& s) { return s == i1 || s == i2; }),
                 r.inputs.end());
  r.inputs.push_back("xs*");
  for (auto& n : r.source.nodes)
    if (n.name == cs->name) n.inputs = {"xs*"};
  for (auto& p : r.parameter_domains)
    if (p.of == i1 || p.of == i2) p.of = cs->name;

  // The target: a Concat of the two inputs, or of one same operator applied to each.
  const RuleNode* ct = nullptr;
  for (const auto& n : rule.target.nodes)
    if (n.op == OpType::Concat) {
      if (ct) return std::nullopt;
      ct = &n;
    }
  if (!ct || ct->inputs.size() != 2 || uses(rule.target, i1) != 1 || uses(rule.target, i2) != 1) return std::nullopt;
  if (ct->inputs[0] == i1 && ct->inputs[1] == i2) {
    for (auto& n : r.target.nodes)
      if (n.name == ct->name) n.inputs = {"xs*"};
    return r;
  }
  const RuleNode* n1 = nullptr;
  const RuleNode* n2 = nullptr;
  for (const auto& n : rule.target.nodes) {
    if (n.inputs.size() == 1 && n.inputs[0] == i1) n1 = &n;
    if (n.inputs.size() == 1 && n.inputs[0] == i2) n2 = &n;
  }
  if (!n1 || !n2 || !same_operation(*n1, *n2) || ct->inputs[0] != n1->name || ct->inputs[1] != n2->name ||
      uses(rule.target, n1->name) != 1 || uses(rule.target, n2->name) != 1)
    return std::nullopt;
  std::vector<RuleNode> nodes;
  for (const auto& n : rule.target.nodes) {
    if (n.name == n2->name) continue;
    RuleNode m = n;
    if (n.name == n1->name) {
      m.inputs = {"xs*"};
      m.foreach = "xs*";
    }
    if (n.name == ct->name) m.inputs = {n1->name + "*"};
    nodes.push_back(std::move(m));
  }
  r.target.nodes = std::move(nodes);
  return r;
}

}  // namespace unity::rules::gen
