#pragma once
// A rule with a variadic input ("xs*": any number of tensors) as the fixed-arity rules it stands
// for: the input becomes xs#0 .. xs#n-1, foreach target nodes are copied once per tensor, and "xs*"
// or "node*" references list every tensor or copy. The verifier proves each arity up to a bound.
#include <vector>

#include "unity/core/rules/rule.h"

namespace unity::rules::spec {

bool is_variadic(const Rule& rule);
Rule expand_variadic(const Rule& rule, int count);

}  // namespace unity::rules::spec
