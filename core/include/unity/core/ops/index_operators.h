#pragma once
// The operators that pick along one axis by value or by index: TopK, GatherElements,
// ScatterElements, OneHot, ArgMax, ArgMin. Shape inference (shape_inference_index.cpp), the
// executor (index_ops.cpp, their task requests and replica rules) and the verifier
// (axioms_index.cpp) each handle them as one family; this is the one list of its members.
#include "unity/core/pcg/op_type.h"

namespace unity {

inline bool is_index_operator(OpType op) {
  return op == OpType::TopK || op == OpType::GatherElements || op == OpType::ScatterElements ||
         op == OpType::OneHot || op == OpType::ArgMax || op == OpType::ArgMin;
}

}  // namespace unity
