#pragma once
// Concat takes any number of inputs, but the enumeration concatenates two. A rule that treats the
// two inputs of its Concat alike (reads them only through the Concat, and in the target either
// concatenates them directly or applies one same operator to each first) holds for any number of
// inputs: it is rewritten with a variadic input "xs*" and a foreach target node, and verified for 1
// to 3 inputs like every variadic rule.
#include <optional>

#include "unity/core/rules/rule.h"

namespace unity::rules::gen {

std::optional<Rule> variadic_concat(const Rule& rule);

}  // namespace unity::rules::gen
