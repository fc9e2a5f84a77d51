#pragma once
// The definition of an operator along one axis (AxisFunction): one input, one output of its shape,
// an `axis` attribute.
#include <utility>

#include "unity/core/ops/operator_definition.h"

namespace unity {

inline OperatorDefinition axis_operator(OpType type, std::string_view name, AxisFunction f,
                                        std::vector<std::string_view> onnx_types,
                                        std::string_view summary) {
  return OperatorDefinition{{type, name, OpCategory::Compute, 1, 1},
                            std::nullopt,
                            std::move(onnx_types),
                            summary,
                            std::move(f)};
}

// Defines operator `op`'s specialization from an AxisFunction expression.
#define UNITY_AXIS_OPERATOR(op, function, onnx_types, summary)         \
  template <>                                                          \
  const OperatorDefinition& define_operator<OpType::op>() {            \
    static const OperatorDefinition d =                                \
        axis_operator(OpType::op, #op, function, onnx_types, summary); \
    return d;                                                          \
  }

}  // namespace unity
