#include "variadic_expansion.h"

#include <map>

#include <fmt/format.h>

namespace unity::rules::spec {
namespace {

bool starred(const std::string& ref) { return !ref.empty() && ref.back() == '*'; }

std::string element(const std::string& stem, int i) { return fmt::format("{}#{}", stem, i); }

}  // namespace

bool is_variadic(const Rule& rule) {
  for (const auto& in : rule.inputs)
    if (starred(in)) return true;
  return false;
}

Rule expand_variadic(const Rule& rule, int count) {
  Rule r = rule;
  std::string stem;
  r.inputs.clear();
  for (const auto& in : rule.inputs) {
    if (!starred(in)) {
      r.inputs.push_back(in);
      continue;
    }
    stem = in.substr(0, in.size() - 1);
    for (int i = 0; i < count; ++i) r.inputs.push_back(element(stem, i));
  }
  std::map<std::string, int> copies;  // foreach target nodes
  for (const auto& n : rule.target.nodes)
    if (!n.foreach.empty()) copies[n.name] = count;
  // "xs*" -> every tensor; "n*" -> every copy of foreach node n; inside a foreach node, "xs*" is its own.
  auto expand = [&](const std::vector<std::string>& refs, int own) {
    std::vector<std::string> out;
    for (const auto& ref : refs) {
      if (!starred(ref)) {
        out.push_back(ref);
        continue;
      }
      const std::string s = ref.substr(0, ref.size() - 1);
      if (s == stem && own >= 0) {
        out.push_back(element(stem, own));
      } else {
        for (int i = 0; i < count; ++i) out.push_back(element(s, i));
      }
    }
    return out;
  };
  for (auto& n : r.source.nodes) n.inputs = expand(n.inputs, -1);
  r.source.outputs = expand(r.source.outputs, -1);
  std::vector<RuleNode> target;
  for (const auto& n : rule.target.nodes) {
    if (n.foreach.empty()) {
      RuleNode m = n;
      m.inputs = expand(n.inputs, -1);
      target.push_back(std::move(m));
      continue;
    }
    for (int i = 0; i < count; ++i) {
      RuleNode m = n;
      m.name = element(n.name, i);
      m.foreach.clear();
      m.inputs = expand(n.inputs, i);
      target.push_back(std::move(m));
    }
  }
  r.target.nodes = std::move(target);
  r.target.outputs = expand(r.target.outputs, -1);
  return r;
}

}  // namespace unity::rules::spec
