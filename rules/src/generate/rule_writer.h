#pragma once
// Turns a pair of equivalent enumerated graphs into a rule in the core's format. How general the
// rule is depends on the level:
//   General: as Symbolic, and every other attribute of a compute operator the source reads
//   (padding,
//            stride, scalar, activation, perm, ...) is a symbol too, so that one rule covers every
//            configuration of the operator it holds for.
//   Symbolic: degrees are a symbol ($d, bound by the source) or a parameter (d); dims the source
//   binds
//             are symbols ($k), dims only the target uses are dim parameters ranging over the axes
//             of a tensor of the same rank; axis, shape, sizes, padding, stride, dilation, scalar,
//             rate and epsilon attributes the source reads are symbols.
//   LiteralDims: as Symbolic, but every dim and axis as enumerated.
//   Literal: degrees too as enumerated (2).
// Attributes that the tensors' sizes determine (out_features, kernel, ...) are left open in the
// source and copied to the target, so a rule found on small tensors applies to a model's.
#include <optional>
#include <string>

#include "enumerator.h"
#include "unity/core/rules/rule.h"

namespace unity::rules::gen {

enum class Level { General, Symbolic, LiteralDims, Literal };

// Nothing when the pair cannot be written (a target node would need a size-specific attribute the
// source does not bind).
std::optional<Rule> write_rule(const Enumeration& e, const GenGraph& source, const GenGraph& target,
                               Level level);

// A name-independent key: two rules with equal keys are the same rule up to renaming.
std::string rule_key(const Rule& rule);
int rule_size(const Rule& rule);  // source plus target operators

}  // namespace unity::rules::gen
