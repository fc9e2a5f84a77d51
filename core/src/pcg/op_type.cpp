#include "unity/core/pcg/op_type.h"

#include <vector>

#include "unity/core/ops/operator_definition.h"

namespace unity {

const OpInfo& op_info(OpType type) { return operator_definition(type).info; }

std::span<const OpInfo> all_op_infos() {
  static const std::vector<OpInfo> infos = [] {
    std::vector<OpInfo> v;
    for (const OperatorDefinition* d : operator_definitions()) v.push_back(d->info);
    return v;
  }();
  return infos;
}

std::string_view to_string(OpType type) { return op_info(type).name; }

std::optional<OpType> op_type_from_string(std::string_view name) {
  for (const OperatorDefinition* d : operator_definitions())
    if (d->info.name == name) return d->info.type;
  return std::nullopt;
}

bool is_elementwise_unary(OpType t) {
  return pointwise_function(t) != nullptr || t == OpType::Dropout;
}

bool is_elementwise_binary(OpType t) {
  return t == OpType::Add || t == OpType::Sub || t == OpType::Mul || t == OpType::Div;
}

}  // namespace unity
