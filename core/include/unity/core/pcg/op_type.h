#pragma once
// Every operator kind of the PCG. Compute operators are drawn green in the views, parallel
// operators (paper 3.3) orange; sources (Input, Weight) are tensors that enter the graph.
#include <optional>
#include <span>
#include <string_view>

#include "unity/core/pcg/op_list.h"

namespace unity {

// The order is op_list.h's: sources, dense algebra, element-wise, data movement, losses, the
// parallel operators, then operators added since (each in its own file, core/src/ops/).
#define UNITY_ENUM_ENTRY(name) name,
enum class OpType { UNITY_OPERATORS(UNITY_ENUM_ENTRY) };
#undef UNITY_ENUM_ENTRY

enum class OpCategory { Source, Compute, Parallel };

// OpInfo::max_inputs of a variadic operator (Concat, the arithmetic's max/min/sum/mean).
inline constexpr int kAnyInputs = 1 << 20;

struct OpInfo {
  OpType type;
  std::string_view name;
  OpCategory category;
  int min_inputs;
  int max_inputs;
};

const OpInfo& op_info(OpType type);
// Every operator's info, in enum order.
std::span<const OpInfo> all_op_infos();
std::string_view to_string(OpType type);
std::optional<OpType> op_type_from_string(std::string_view name);

inline bool is_parallel_op(OpType t) { return op_info(t).category == OpCategory::Parallel; }
inline bool is_source_op(OpType t) { return op_info(t).category == OpCategory::Source; }
inline bool is_compute_op(OpType t) { return op_info(t).category == OpCategory::Compute; }
bool is_elementwise_unary(OpType t);
bool is_elementwise_binary(OpType t);

}  // namespace unity
