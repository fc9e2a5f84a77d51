#include <fstream>
#include <set>

#include <fmt/format.h>

#include "embedded_files.h"
#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/rule.h"

namespace unity {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& rule, const std::string& field, const std::string& what) {
  throw InputError(fmt::format("rule '{}': {}: {}", rule, field, what));
}

std::vector<std::string> string_list(const json& j, const std::string& rule, const std::string& field) {
  if (!j.is_array()) bad(rule, field, "must be a list of names");
  std::vector<std::string> out;
  for (const auto& x : j) {
    if (!x.is_string()) bad(rule, field, "must be a list of names, got " + x.dump());
    out.push_back(x.get<std::string>());
  }
  return out;
}

std::string base_name(const std::string& ref) { return ref.substr(0, ref.find(':')); }

RuleAttr parse_attr(const json& v, const std::vector<std::string>& params) {
  RuleAttr a;
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (!s.empty() && s[0] == '$') return {RuleAttr::Kind::Symbol, {}, s.substr(1)};
    for (const auto& p : params)
      if (p == s) return {RuleAttr::Kind::Parameter, {}, s};
  }
  a.literal = v;
  return a;
}

RuleGraph parse_graph(const json& j, const std::string& rule, const std::string& side,
                      const std::vector<std::string>& inputs, const std::vector<std::string>& params,
                      const std::set<std::string>& source_names) {
  if (!j.is_object()) bad(rule, side, "must be an object with 'nodes' and 'outputs'");
  RuleGraph g;
  if (!j.contains("nodes") || !j["nodes"].is_array()) bad(rule, side + ".nodes", "missing or not a list");
  std::set<std::string> known(inputs.begin(), inputs.end());
  for (std::size_t i = 0; i < j["nodes"].size(); ++i) {
    const json& n = j["nodes"][i];
    const std::string where = fmt::format("{}.nodes[{}]", side, i);
    RuleNode node;
    if (!n.contains("name") || !n["name"].is_string()) bad(rule, where + ".name", "missing");
    node.name = n["name"].get<std::string>();
    if (known.count(node.name)) bad(rule, where + ".name", "'" + node.name + "' is used twice");
    if (!n.contains("op") || !n["op"].is_string()) bad(rule, where + ".op", "missing");
    const auto op = op_type_from_string(n["op"].get<std::string>());
    if (!op) bad(rule, where + ".op", "unknown op '" + n["op"].get<std::string>() + "'");
    node.op = *op;
    node.inputs = string_list(n.value("inputs", json::array()), rule, where + ".inputs");
    for (const auto& in : node.inputs)
      if (!known.count(base_name(in)))
        bad(rule, where + ".inputs", "'" + in + "' is neither a rule input nor an earlier node");
    const auto& info = op_info(node.op);
    const int arity = static_cast<int>(node.inputs.size());
    if (arity < info.min_inputs || arity > info.max_inputs)
      bad(rule, where + ".inputs", fmt::format("{} takes {}..{} inputs, got {}", info.name,
                                               info.min_inputs, info.max_inputs, arity));
    if (n.contains("attrs")) {
      if (!n["attrs"].is_object()) bad(rule, where + ".attrs", "must be an object");
      for (const auto& [k, v] : n["attrs"].items()) node.attrs[k] = parse_attr(v, params);
    }
    if (n.contains("copy_attrs_of")) {
      if (side != "target") bad(rule, where + ".copy_attrs_of", "only target nodes copy attributes");
      node.copy_of = n["copy_attrs_of"].get<std::string>();
      if (!source_names.count(node.copy_of))
        bad(rule, where + ".copy_attrs_of", "'" + node.copy_of + "' is not a source node");
    }
    known.insert(node.name);
    g.nodes.push_back(std::move(node));
  }
  g.outputs = string_list(j.value("outputs", json::array()), rule, side + ".outputs");
  if (g.outputs.empty()) bad(rule, side + ".outputs", "a pattern needs at least one output");
  for (const auto& o : g.outputs)
    if (!known.count(base_name(o))) bad(rule, side + ".outputs", "'" + o + "' is not a node");
  return g;
}

json graph_to_json(const RuleGraph& g) {
  json nodes = json::array();
  for (const auto& n : g.nodes) {
    json attrs = json::object();
    for (const auto& [k, a] : n.attrs) {
      if (a.kind == RuleAttr::Kind::Literal) attrs[k] = a.literal;
      if (a.kind == RuleAttr::Kind::Symbol) attrs[k] = "$" + a.name;
      if (a.kind == RuleAttr::Kind::Parameter) attrs[k] = a.name;
    }
    json jn = {{"name", n.name}, {"op", std::string(to_string(n.op))}, {"inputs", n.inputs}};
    if (!attrs.empty()) jn["attrs"] = attrs;
    if (!n.copy_of.empty()) jn["copy_attrs_of"] = n.copy_of;
    nodes.push_back(jn);
  }
  return {{"nodes", nodes}, {"outputs", g.outputs}};
}

}  // namespace

const Rule* RuleSet::find(const std::string& name) const {
  for (const auto& r : rules)
    if (r.name == name) return &r;
  return nullptr;
}

RuleSet rules_from_json(const json& j, const std::string& origin) {
  if (!j.is_object() || j.value("format", "") != "unity-rules")
    throw InputError(origin + ": field 'format' must be \"unity-rules\"");
  if (j.value("version", 0) != 1) throw InputError(origin + ": field 'version' must be 1");
  if (!j.contains("rules") || !j["rules"].is_array())
    throw InputError(origin + ": field 'rules' must be a list");
  RuleSet set;
  std::set<std::string> names;
  for (std::size_t i = 0; i < j["rules"].size(); ++i) {
    const json& r = j["rules"][i];
    Rule rule;
    if (!r.is_object() || !r.contains("name") || !r["name"].is_string())
      throw InputError(fmt::format("{}: rules[{}]: missing field 'name'", origin, i));
    rule.name = r["name"].get<std::string>();
    if (!names.insert(rule.name).second) bad(rule.name, "name", "two rules share this name");
    rule.description = r.value("description", "");
    rule.kind = r.value("kind", "");
    if (rule.kind != "algebraic" && rule.kind != "parallel")
      bad(rule.name, "kind", "must be \"algebraic\" or \"parallel\"");
    rule.inputs = string_list(r.value("inputs", json::array()), rule.name, "inputs");
    rule.parameters = string_list(r.value("parameters", json::array()), rule.name, "parameters");
    if (!r.contains("source")) bad(rule.name, "source", "missing");
    if (!r.contains("target")) bad(rule.name, "target", "missing");
    rule.source = parse_graph(r["source"], rule.name, "source", rule.inputs, rule.parameters, {});
    std::set<std::string> source_names;
    for (const auto& n : rule.source.nodes) source_names.insert(n.name);
    rule.target = parse_graph(r["target"], rule.name, "target", rule.inputs, rule.parameters,
                              source_names);
    if (rule.source.nodes.empty()) bad(rule.name, "source.nodes", "the pattern matches nothing");
    if (rule.source.outputs.size() != rule.target.outputs.size())
      bad(rule.name, "target.outputs",
          fmt::format("{} outputs for {} source outputs", rule.target.outputs.size(),
                      rule.source.outputs.size()));
    for (const auto& n : rule.target.nodes)
      for (const auto& [k, a] : n.attrs)
        if (a.kind == RuleAttr::Kind::Symbol) {
          bool bound = false;
          for (const auto& s : rule.source.nodes)
            for (const auto& [sk, sa] : s.attrs)
              if (sa.kind == RuleAttr::Kind::Symbol && sa.name == a.name) bound = true;
          if (!bound) bad(rule.name, "target attrs." + k, "symbol $" + a.name + " is not bound by the source");
        }
    set.rules.push_back(std::move(rule));
  }
  return set;
}

json rules_to_json(const RuleSet& set) {
  json rules = json::array();
  for (const auto& r : set.rules) {
    json j = {{"name", r.name},
              {"kind", r.kind},
              {"inputs", r.inputs},
              {"source", graph_to_json(r.source)},
              {"target", graph_to_json(r.target)}};
    if (!r.description.empty()) j["description"] = r.description;
    if (!r.parameters.empty()) j["parameters"] = r.parameters;
    rules.push_back(j);
  }
  return {{"format", "unity-rules"}, {"version", 1}, {"rules", rules}};
}

RuleSet load_rule_file(const std::filesystem::path& path) {
  return rules_from_json(read_json_file(path), path.string());
}

RuleSet default_rules() {
  RuleSet all;
  for (const auto& f : detail::embedded_rules()) {
    RuleSet part = rules_from_json(json::parse(f.text), "rules/" + std::string(f.name) + ".json");
    for (auto& r : part.rules) all.rules.push_back(std::move(r));
  }
  return all;
}

}  // namespace unity
