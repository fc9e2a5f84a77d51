#pragma once
// Substitutions as data (paper section 4): a rule is a source pattern and a target graph over compute
// and parallel operators. Hand-written and generated rules share this format (docs/rules.md); the core
// loads rule files at run time and rejects a malformed rule with a message naming the rule and field.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "unity/core/op_type.h"

namespace unity {

// An attribute in a pattern: a literal to compare or write, a symbol ("$name") bound on the source side
// and reused on the target side, or a rule parameter ("d"). `copy_of` on a target node copies every
// attribute of a matched source node first.
struct RuleAttr {
  enum class Kind { Literal, Symbol, Parameter };
  Kind kind = Kind::Literal;
  nlohmann::json literal;  // Literal
  std::string name;        // Symbol / Parameter
};

struct RuleNode {
  std::string name;
  OpType op = OpType::Identity;
  std::vector<std::string> inputs;  // pattern inputs or other nodes' names, "name" or "name:index"
  std::map<std::string, RuleAttr> attrs;
  std::string copy_of;              // target only
};

struct RuleGraph {
  std::vector<RuleNode> nodes;        // in topological order
  std::vector<std::string> outputs;   // "name" or "name:index"; source and target align by position
};

struct Rule {
  std::string name;
  std::string description;
  std::string kind;                     // "algebraic" or "parallel"
  std::vector<std::string> inputs;      // the pattern's free tensors
  std::vector<std::string> parameters;  // integer parameters chosen by the search (degrees)
  RuleGraph source;
  RuleGraph target;
  bool is_parallel() const { return kind == "parallel"; }
};

struct RuleSet {
  std::vector<Rule> rules;
  const Rule* find(const std::string& name) const;
};

// Throws InputError naming the rule and the field ("rule 'linear_sample': target.nodes[2].op: unknown
// op 'Linaer'").
RuleSet rules_from_json(const nlohmann::json& j, const std::string& origin = "rules");
nlohmann::json rules_to_json(const RuleSet& rules);
RuleSet load_rule_file(const std::filesystem::path& path);
// The rule set compiled in from rules/*.json.
RuleSet default_rules();

}  // namespace unity
