#pragma once
// Substitutions as data (paper section 4): a rule is a source pattern and a target graph over
// compute and parallel operators. Hand-written and generated rules share this format (rule files
// in docs/formats.md); the core loads rule files at run time and rejects a malformed rule with a
// message naming the rule and field.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "unity/core/pcg/op_type.h"
#include "unity/core/rules/proved_scope.h"

namespace unity {

// An attribute in a pattern: a literal to compare or write, a symbol ("$name") bound on the source
// side and reused on the target side, or a rule parameter ("d"). `copy_of` on a target node copies
// every attribute of a matched source node first.
struct RuleAttr {
  enum class Kind { Literal, Symbol, Parameter };
  Kind kind = Kind::Literal;
  nlohmann::json literal;  // Literal
  std::string name;        // Symbol / Parameter
};

// Variadic patterns: a rule input whose name ends in '*' ("xs*") stands for any number (at least
// one) of tensors. A source node lists it last among its inputs and binds the rest of the node's
// inputs to it (a Concat of any arity). A target node with `foreach: "xs*"` is created once per
// bound tensor, reading that tensor where it names "xs*"; other target nodes read all of them in
// order as "xs*", or all copies of a foreach node "n" as "n*".
struct RuleNode {
  std::string name;
  OpType op = OpType::Identity;
  std::vector<std::string> inputs;  // pattern inputs or other nodes' names, "name" or "name:index"
  std::map<std::string, RuleAttr> attrs;
  std::string copy_of;  // target only
  std::string foreach;  // target only: the variadic input it is repeated over
};

struct RuleGraph {
  std::vector<RuleNode> nodes;       // in topological order
  std::vector<std::string> outputs;  // "name" or "name:index"; source and target align by position
};

// What values a parameter takes. A degree ranges over the degrees the search allows (divisors of
// the device count); a dim over the axes of one tensor of the match (a rule input, or a source
// node's output), so one rule states "partition along any axis" for operators of any rank.
struct RuleParameter {
  enum class Domain { Degree, Dim };
  std::string name;
  Domain domain = Domain::Degree;
  std::string of;  // Dim: the rule input or source node whose axes it ranges over
};

// A condition on a match and its parameters, checked before the target is built. Operands are
// integers, "$symbol", a parameter name, or rank(t), size(t,k), degree(t,k), replica(t) of a rule
// input or source node t (k an integer, symbol or parameter), and last(t) = rank(t) - 1. Shape
// inference already rejects targets whose degrees do not divide; constraints state what it cannot
// see (e.g. "the concat axis is not the partitioned one").
struct RuleConstraint {
  enum class Kind { Equal, NotEqual, Divides, Less };
  Kind kind = Kind::Equal;
  std::string a, b;  // Divides: a divides b
};

// What a rule changes: the computation (algebraic), how it is split across devices (parallel), or
// both in one step (joint: a rewrite that pays only through the split it enables, as the paper's
// Fig. 16c). The sequential pipeline runs the algebraic rules first, then the parallel ones; only
// the joint search applies a joint rule.
enum class RuleKind { Algebraic, Parallel, Joint };
std::string_view to_string(RuleKind kind);  // "algebraic", "parallel", "joint"
std::optional<RuleKind> rule_kind_from_string(std::string_view name);

struct Rule {
  std::string name;
  std::string description;
  RuleKind kind = RuleKind::Algebraic;
  std::vector<std::string> inputs;      // the pattern's free tensors
  std::vector<std::string> parameters;  // integer parameters chosen by the search, in order
  std::vector<RuleParameter> parameter_domains;  // one per parameter, same order
  std::vector<RuleConstraint> constraints;
  RuleGraph source;
  RuleGraph target;
  // What the verifier proved when the rule was written (the "verified" field: "degrees up to 8",
  // "all degrees and shapes; 1 to 8 variadic inputs"; empty: every degree and arity), and that
  // scope parsed. The matcher applies the rule only inside `proved`; `unity rules verify` checks
  // the claim first, and the shipped-rule tests that the proof covers it.
  std::string verified;
  ProvedScope proved;
  bool is_parallel() const { return kind == RuleKind::Parallel; }
  std::string variadic_input() const;  // the rule input ending in '*', or empty
};

inline bool is_variadic_ref(const std::string& ref) { return !ref.empty() && ref.back() == '*'; }

// A tensor a pattern names: a rule input or node ("name", its output 0) or one output of a node
// ("name:index"). Names hold no ':'; the index is a non-negative decimal number.
struct RuleTensorRef {
  std::string name;
  int output = 0;
};
// Nothing where `ref` is malformed ("w:", "w:-1", ":0", "w:1:2"); the loader refuses such a file.
std::optional<RuleTensorRef> parse_rule_ref(std::string_view ref);
// The same, throwing InputError naming the reference: for rules that were built without the loader.
RuleTensorRef rule_ref(std::string_view ref);

struct RuleSet {
  std::vector<Rule> rules;
  const Rule* find(const std::string& name) const;
};

std::string_view to_string(RuleConstraint::Kind kind);

// Throws InputError naming the rule and the field ("rule 'linear_sample': target.nodes[2].op:
// unknown op 'Linaer'").
RuleSet rules_from_json(const nlohmann::json& j, const std::string& origin = "rules");
nlohmann::json rules_to_json(const RuleSet& rules);
RuleSet load_rule_file(const std::filesystem::path& path);
// The rule set compiled in: the verified union of the hand-written rules (rules/*.json) and the
// generated ones (rules/generated/*.json), hand-written first. Parsed once, on first use.
const RuleSet& default_rules();

}  // namespace unity
