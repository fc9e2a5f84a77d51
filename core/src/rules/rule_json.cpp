#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "embedded_files.h"
#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/rules/rule.h"

namespace unity {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& rule, const std::string& field, const std::string& what) {
  throw InputError(fmt::format("rule '{}': {}: {}", rule, field, what));
}

std::vector<std::string> string_list(const json& j, const std::string& rule,
                                     const std::string& field) {
  if (!j.is_array()) bad(rule, field, "must be a list of names");
  std::vector<std::string> out;
  for (const auto& x : j) {
    if (!x.is_string()) bad(rule, field, "must be a list of names, got " + x.dump());
    out.push_back(x.get<std::string>());
  }
  return out;
}

// A name a rule gives a tensor (an input, a node): ':' separates a node from its output index.
void check_name(const std::string& name, const std::string& rule, const std::string& field) {
  if (name.empty() || name == "*") bad(rule, field, "a name must not be empty");
  if (name.find(':') != std::string::npos)
    bad(rule, field, "'" + name + "': a name holds no ':' (it separates a node from its output)");
}

// The tensor `ref` names, refused unless it is a name or name:index and, with an index, a node's.
RuleTensorRef checked_ref(const std::string& ref, const std::set<std::string>& nodes,
                          const std::string& rule, const std::string& field) {
  const auto parsed = parse_rule_ref(ref);
  if (!parsed)
    bad(rule, field,
        "'" + ref + "' is not a tensor reference (a name, or name:index for one output)");
  if (ref.find(':') != std::string::npos && !nodes.count(parsed->name))
    bad(rule, field, "'" + ref + "' reads an output of '" + parsed->name + "', which is no node");
  return *parsed;
}

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
                      const std::vector<std::string>& inputs,
                      const std::vector<std::string>& params,
                      const std::set<std::string>& source_names) {
  if (!j.is_object()) bad(rule, side, "must be an object with 'nodes' and 'outputs'");
  RuleGraph g;
  if (!j.contains("nodes") || !j["nodes"].is_array())
    bad(rule, side + ".nodes", "missing or not a list");
  std::set<std::string> known(inputs.begin(), inputs.end());
  std::set<std::string> nodes;     // this side's nodes so far
  std::set<std::string> repeated;  // foreach nodes
  for (std::size_t i = 0; i < j["nodes"].size(); ++i) {
    const json& n = j["nodes"][i];
    const std::string where = fmt::format("{}.nodes[{}]", side, i);
    RuleNode node;
    if (!n.contains("name") || !n["name"].is_string()) bad(rule, where + ".name", "missing");
    node.name = n["name"].get<std::string>();
    check_name(node.name, rule, where + ".name");
    if (known.count(node.name)) bad(rule, where + ".name", "'" + node.name + "' is used twice");
    if (!n.contains("op") || !n["op"].is_string()) bad(rule, where + ".op", "missing");
    const auto op = op_type_from_string(n["op"].get<std::string>());
    if (!op) bad(rule, where + ".op", "unknown op '" + n["op"].get<std::string>() + "'");
    node.op = *op;
    node.inputs = string_list(n.value("inputs", json::array()), rule, where + ".inputs");
    if (n.contains("foreach")) {
      if (side != "target") bad(rule, where + ".foreach", "only target nodes repeat");
      node.foreach = n["foreach"].is_string() ? n["foreach"].get<std::string>() : "";
      if (!is_variadic_ref(node.foreach) ||
          std::find(inputs.begin(), inputs.end(), node.foreach) == inputs.end())
        bad(rule, where + ".foreach", "'" + node.foreach + "' is not a variadic rule input");
    }
    int variadic_refs = 0;
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      const auto& in = node.inputs[k];
      if (is_variadic_ref(in)) {
        const std::string stem = in.substr(0, in.size() - 1);
        const bool input = std::find(inputs.begin(), inputs.end(), in) != inputs.end();
        if (!input && !repeated.count(stem))
          bad(rule, where + ".inputs",
              "'" + in + "' is neither a variadic input nor a foreach node");
        if (side == "source" && k + 1 != node.inputs.size())
          bad(rule, where + ".inputs", "a variadic input comes last");
        if (in != node.foreach) ++variadic_refs;
        continue;
      }
      const std::string name = checked_ref(in, nodes, rule, where + ".inputs").name;
      if (!known.count(name))
        bad(rule, where + ".inputs", "'" + in + "' is neither a rule input nor an earlier node");
      if (repeated.count(name))
        bad(rule, where + ".inputs", "'" + in + "' is repeated: read it as '" + in + "*'");
    }
    const auto& info = op_info(node.op);
    const int arity = static_cast<int>(node.inputs.size());
    if (arity < info.min_inputs || (variadic_refs == 0 && arity > info.max_inputs))
      bad(rule, where + ".inputs",
          fmt::format("{} takes {}..{} inputs, got {}", info.name, info.min_inputs, info.max_inputs,
                      arity));
    if (n.contains("attrs")) {
      if (!n["attrs"].is_object()) bad(rule, where + ".attrs", "must be an object");
      for (const auto& [k, v] : n["attrs"].items()) node.attrs[k] = parse_attr(v, params);
    }
    if (n.contains("copy_attrs_of")) {
      if (side != "target")
        bad(rule, where + ".copy_attrs_of", "only target nodes copy attributes");
      node.copy_of = n["copy_attrs_of"].get<std::string>();
      if (!source_names.count(node.copy_of))
        bad(rule, where + ".copy_attrs_of", "'" + node.copy_of + "' is not a source node");
    }
    known.insert(node.name);
    nodes.insert(node.name);
    if (!node.foreach.empty()) repeated.insert(node.name);
    g.nodes.push_back(std::move(node));
  }
  g.outputs = string_list(j.value("outputs", json::array()), rule, side + ".outputs");
  if (g.outputs.empty()) bad(rule, side + ".outputs", "a pattern needs at least one output");
  for (const auto& o : g.outputs) {
    const std::string name = checked_ref(o, nodes, rule, side + ".outputs").name;
    if (!known.count(name)) bad(rule, side + ".outputs", "'" + o + "' is not a node");
    if (repeated.count(name) || is_variadic_ref(o))
      bad(rule, side + ".outputs", "'" + o + "' is repeated: an output is one tensor");
  }
  return g;
}

std::vector<RuleParameter> parse_parameters(const json& j, const std::string& rule,
                                            const std::vector<std::string>& inputs) {
  if (!j.is_array()) bad(rule, "parameters", "must be a list");
  std::vector<RuleParameter> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const json& p = j[i];
    const std::string where = fmt::format("parameters[{}]", i);
    RuleParameter param;
    if (p.is_string()) {
      param.name = p.get<std::string>();
    } else if (p.is_object()) {
      if (!p.contains("name") || !p["name"].is_string()) bad(rule, where + ".name", "missing");
      param.name = p["name"].get<std::string>();
      const std::string domain = p.value("domain", "degree");
      if (domain == "dim") {
        param.domain = RuleParameter::Domain::Dim;
        if (!p.contains("of") || !p["of"].is_string())
          bad(rule, where + ".of", "a dim parameter names the tensor whose axes it ranges over");
        param.of = p["of"].get<std::string>();
      } else if (domain != "degree") {
        bad(rule, where + ".domain", "must be \"degree\" or \"dim\", got \"" + domain + "\"");
      }
    } else {
      bad(rule, where, "must be a name or an object with 'name' and 'domain'");
    }
    if (param.name.empty() || param.name[0] == '$')
      bad(rule, where, "a parameter name must not be empty or start with '$'");
    for (const auto& q : out)
      if (q.name == param.name) bad(rule, where, "'" + param.name + "' is declared twice");
    for (const auto& in : inputs)
      if (in == param.name) bad(rule, where, "'" + param.name + "' is also a rule input");
    out.push_back(std::move(param));
  }
  return out;
}

void check_term(const std::string& operand, const std::string& rule, const std::string& where,
                const std::set<std::string>& tensors, const std::vector<std::string>& params);

// An operand is a sum of terms ("rank(x)-$nd"); each term an integer, $symbol, parameter or one of
// rank(t), last(t), size(t,k), degree(t,k), replica(t).
void check_operand(const std::string& operand, const std::string& rule, const std::string& where,
                   const std::set<std::string>& tensors, const std::vector<std::string>& params) {
  if (operand.empty()) bad(rule, where, "empty operand");
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= operand.size(); ++i) {
    const char c = i < operand.size() ? operand[i] : '+';
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == '+' || c == '-') && i > 0) {
      check_term(operand.substr(start, i - start), rule, where, tensors, params);
      start = i + 1;
    }
  }
}

void check_term(const std::string& operand, const std::string& rule, const std::string& where,
                const std::set<std::string>& tensors, const std::vector<std::string>& params) {
  if (operand.empty()) bad(rule, where, "empty term");
  if (operand[0] == '$') return;
  if (std::all_of(operand.begin(), operand.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '-'; }))
    return;
  if (std::find(params.begin(), params.end(), operand) != params.end()) return;
  const auto open = operand.find('(');
  if (open == std::string::npos || operand.back() != ')')
    bad(rule, where, "'" + operand + "' is not an integer, $symbol, parameter or function");
  const std::string fn = operand.substr(0, open);
  if (fn != "rank" && fn != "last" && fn != "size" && fn != "degree" && fn != "replica")
    bad(rule, where, "unknown function '" + fn + "' (rank, last, size, degree, replica)");
  const std::string args = operand.substr(open + 1, operand.size() - open - 2);
  const std::string tensor = args.substr(0, args.find(','));
  if (!tensors.count(tensor))
    bad(rule, where, "'" + tensor + "' is neither a rule input nor a source node");
}

std::vector<RuleConstraint> parse_constraints(const json& j, const std::string& rule,
                                              const std::set<std::string>& tensors,
                                              const std::vector<std::string>& params) {
  if (!j.is_array()) bad(rule, "constraints", "must be a list");
  std::vector<RuleConstraint> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const json& c = j[i];
    const std::string where = fmt::format("constraints[{}]", i);
    if (!c.is_object() || !c.contains("kind") || !c["kind"].is_string())
      bad(rule, where + ".kind", "missing");
    RuleConstraint rc;
    const std::string kind = c["kind"].get<std::string>();
    if (kind == "equal")
      rc.kind = RuleConstraint::Kind::Equal;
    else if (kind == "not_equal")
      rc.kind = RuleConstraint::Kind::NotEqual;
    else if (kind == "divides")
      rc.kind = RuleConstraint::Kind::Divides;
    else if (kind == "less")
      rc.kind = RuleConstraint::Kind::Less;
    else
      bad(rule, where + ".kind", "must be equal, not_equal, divides or less, got '" + kind + "'");
    for (const char* side : {"a", "b"}) {
      if (!c.contains(side)) bad(rule, where + "." + side, "missing");
      const json& v = c[side];
      std::string operand = v.is_number_integer() ? std::to_string(v.get<std::int64_t>())
                            : v.is_string()       ? v.get<std::string>()
                                                  : "";
      operand.erase(std::remove(operand.begin(), operand.end(), ' '), operand.end());
      check_operand(operand, rule, where + "." + side, tensors, params);
      (std::string(side) == "a" ? rc.a : rc.b) = operand;
    }
    out.push_back(std::move(rc));
  }
  return out;
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
    if (!n.foreach.empty()) jn["foreach"] = n.foreach;
    nodes.push_back(jn);
  }
  return {{"nodes", nodes}, {"outputs", g.outputs}};
}

}  // namespace

std::string_view to_string(RuleKind kind) {
  switch (kind) {
    case RuleKind::Parallel:
      return "parallel";
    case RuleKind::Joint:
      return "joint";
    case RuleKind::Algebraic:
      break;
  }
  return "algebraic";
}

std::optional<RuleKind> rule_kind_from_string(std::string_view name) {
  for (auto kind : {RuleKind::Algebraic, RuleKind::Parallel, RuleKind::Joint})
    if (to_string(kind) == name) return kind;
  return std::nullopt;
}

std::string_view to_string(RuleConstraint::Kind kind) {
  switch (kind) {
    case RuleConstraint::Kind::Equal:
      return "equal";
    case RuleConstraint::Kind::NotEqual:
      return "not_equal";
    case RuleConstraint::Kind::Divides:
      return "divides";
    default:
      return "less";
  }
}

std::string Rule::variadic_input() const {
  for (const auto& in : inputs)
    if (is_variadic_ref(in)) return in;
  return "";
}

const Rule* RuleSet::find(const std::string& name) const {
  for (const auto& r : rules)
    if (r.name == name) return &r;
  return nullptr;
}

namespace {

// rules_from_json without its guard: optional fields read with json::value throw json's type_error
// when the file holds another type there.
RuleSet rules_from_json_fields(const json& j, const std::string& origin) {
  if (!j.is_object() || j.value("format", "") != "unity-rules")
    throw InputError(origin + ": field 'format' must be \"unity-rules\"");
  if (json_integer_or(j, "version", 0, origin) != 1)
    throw InputError(origin + ": field 'version' must be 1");
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
    if (r.contains("verified") && !r["verified"].is_string())
      bad(rule.name, "verified", "must be a string such as \"degrees up to 8\"");
    rule.verified = r.value("verified", "");
    const auto proved = parse_proved_scope(rule.verified);
    if (!proved)
      bad(rule.name, "verified",
          fmt::format("'{}' states no proved scope (\"all degrees and shapes\" or \"degrees up "
                      "to N\", optionally followed by \"; 1 to K variadic inputs\")",
                      rule.verified));
    rule.proved = *proved;
    const auto kind = r.contains("kind") && r["kind"].is_string()
                          ? rule_kind_from_string(r["kind"].get<std::string>())
                          : std::nullopt;
    if (!kind) bad(rule.name, "kind", "must be \"algebraic\", \"parallel\" or \"joint\"");
    rule.kind = *kind;
    rule.inputs = string_list(r.value("inputs", json::array()), rule.name, "inputs");
    for (const auto& in : rule.inputs) check_name(in, rule.name, "inputs");
    if (std::count_if(rule.inputs.begin(), rule.inputs.end(), is_variadic_ref) > 1)
      bad(rule.name, "inputs", "at most one variadic input (ending in '*')");
    rule.parameter_domains =
        parse_parameters(r.value("parameters", json::array()), rule.name, rule.inputs);
    for (const auto& p : rule.parameter_domains) rule.parameters.push_back(p.name);
    if (!r.contains("source")) bad(rule.name, "source", "missing");
    if (!r.contains("target")) bad(rule.name, "target", "missing");
    rule.source = parse_graph(r["source"], rule.name, "source", rule.inputs, rule.parameters, {});
    std::set<std::string> source_names;
    for (const auto& n : rule.source.nodes) source_names.insert(n.name);
    rule.target =
        parse_graph(r["target"], rule.name, "target", rule.inputs, rule.parameters, source_names);
    if (rule.source.nodes.empty()) bad(rule.name, "source.nodes", "the pattern matches nothing");
    std::set<std::string> tensors(rule.inputs.begin(), rule.inputs.end());
    tensors.insert(source_names.begin(), source_names.end());
    for (std::size_t k = 0; k < rule.parameter_domains.size(); ++k) {
      const auto& p = rule.parameter_domains[k];
      if (p.domain == RuleParameter::Domain::Dim && !tensors.count(p.of))
        bad(rule.name, fmt::format("parameters[{}].of", k),
            "'" + p.of + "' is neither a rule input nor a source node");
    }
    rule.constraints = parse_constraints(r.value("constraints", json::array()), rule.name, tensors,
                                         rule.parameters);
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
          if (!bound)
            bad(rule.name, "target attrs." + k,
                "symbol $" + a.name + " is not bound by the source");
        }
    set.rules.push_back(std::move(rule));
  }
  return set;
}

}  // namespace

RuleSet rules_from_json(const json& j, const std::string& origin) {
  try {
    return rules_from_json_fields(j, origin);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: a field has the wrong type or value ({})", origin, e.what()));
  }
}

json rules_to_json(const RuleSet& set) {
  json rules = json::array();
  for (const auto& r : set.rules) {
    json j = {{"name", r.name},
              {"kind", to_string(r.kind)},
              {"inputs", r.inputs},
              {"source", graph_to_json(r.source)},
              {"target", graph_to_json(r.target)}};
    if (!r.description.empty()) j["description"] = r.description;
    if (!r.verified.empty()) j["verified"] = r.verified;
    if (!r.parameter_domains.empty()) {
      json params = json::array();
      for (const auto& p : r.parameter_domains) {
        if (p.domain == RuleParameter::Domain::Degree)
          params.push_back(p.name);
        else
          params.push_back({{"name", p.name}, {"domain", "dim"}, {"of", p.of}});
      }
      j["parameters"] = params;
    }
    if (!r.constraints.empty()) {
      json cs = json::array();
      for (const auto& c : r.constraints)
        cs.push_back({{"kind", std::string(to_string(c.kind))}, {"a", c.a}, {"b", c.b}});
      j["constraints"] = cs;
    }
    rules.push_back(j);
  }
  return {{"format", "unity-rules"}, {"version", 1}, {"rules", rules}};
}

RuleSet load_rule_file(const std::filesystem::path& path) {
  return rules_from_json(read_json_file(path), path.string());
}

const RuleSet& default_rules() {
  // Parsed once and shared: the generated file alone holds some 1,750 rules.
  static const RuleSet all = [] {
    RuleSet out;
    auto add = [&](const std::vector<detail::EmbeddedFile>& files, const std::string& folder) {
      for (const auto& f : files) {
        RuleSet part = rules_from_json(json::parse(f.text), folder + std::string(f.name) + ".json");
        for (auto& r : part.rules) out.rules.push_back(std::move(r));
      }
    };
    add(detail::embedded_rules(), "rules/");
    add(detail::embedded_generated_rules(), "rules/generated/");
    return out;
  }();
  return all;
}

}  // namespace unity
