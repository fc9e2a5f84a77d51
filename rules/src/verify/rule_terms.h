#pragma once
// A rule as terms of the logic: its inputs become tensor variables, its symbols ($k) and parameters
// (d) integer, real or list variables, the attributes a source pattern leaves open fresh variables,
// and a target node that copies a source node's attributes takes that node's attribute terms.
#include <map>
#include <string>
#include <vector>

#include "spec_expr.h"
#include "unity/core/rules/rule.h"

namespace unity::rules::spec {

struct RuleTerms {
  std::vector<E> source_outputs;
  std::vector<E> target_outputs;
  std::vector<E> nodes;                   // every source and target node output the rule builds
  std::map<std::string, E> source_nodes;  // source node name -> its term (output 0)
  std::map<std::string, E> inputs;        // rule input -> variable
  std::vector<E> premises;  // domains of parameters and symbols, the rule's constraints
  std::vector<std::string> degree_vars;  // variables standing for degrees (symbols and parameters)
  std::string error;                     // why the rule cannot be encoded; empty when it can
};

RuleTerms rule_terms(const Rule& rule);

// The variable a rule parameter or symbol becomes.
std::string parameter_var(const std::string& name);
std::string symbol_var(const std::string& name);

}  // namespace unity::rules::spec
