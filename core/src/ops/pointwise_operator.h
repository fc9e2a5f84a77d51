#pragma once
// The definition of a point-wise operator: one input, one output of its shape, and its function.
#include <utility>

#include "unity/core/ops/operator_definition.h"

namespace unity {

inline OperatorDefinition pointwise_operator(OpType type, std::string_view name,
                                             PointwiseFunction f,
                                             std::vector<std::string_view> onnx_types,
                                             std::string_view summary) {
  return OperatorDefinition{{type, name, OpCategory::Compute, 1, 1},
                            std::move(f),
                            std::move(onnx_types),
                            summary,
                            std::nullopt};
}

// Defines operator `op`'s specialization from a PointwiseFunction expression.
#define UNITY_POINTWISE_OPERATOR(op, function, onnx_types, summary)         \
  template <>                                                               \
  const OperatorDefinition& define_operator<OpType::op>() {                 \
    static const OperatorDefinition d =                                     \
        pointwise_operator(OpType::op, #op, function, onnx_types, summary); \
    return d;                                                               \
  }

}  // namespace unity
