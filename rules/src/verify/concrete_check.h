#pragma once
// Rules on concrete values, the way the search applies them: a small graph holds the source pattern
// on random inputs; the core's matcher finds it, its substitution builds the target with each
// parameter choice, and the evaluator compares what the pattern's consumers see before and after.
// The source must be defined (meaningful) for an instance to count; the target must then be defined
// and equal, or the instance is a counterexample.
#include <cstdint>
#include <string>
#include <vector>

#include "rule_terms.h"

namespace unity::rules::spec {

struct ConcreteOutcome {
  int compared = 0;            // instances where source and target were compared
  bool refuted = false;
  std::string counterexample;  // set when refuted
};

struct ConcreteOptions {
  std::uint64_t seed = 1;
  int trials = 300;
  int enough = 12;
  std::vector<std::int64_t> degrees = {2, 3, 4};  // values for degree parameters
};

// `rule` is matched and applied as the search does; `fixed` (the same rule, or one arity of a variadic
// rule) and its terms say what graph to build.
ConcreteOutcome concrete_check(const Rule& rule, const Rule& fixed, const RuleTerms& terms,
                               const ConcreteOptions& options);

}  // namespace unity::rules::spec
