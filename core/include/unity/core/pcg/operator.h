#pragma once
#include <string>

#include "unity/core/pcg/attributes.h"
#include "unity/core/pcg/op_type.h"

namespace unity {

// One node's operation: its kind, its attributes and a human name (the name is not structure: the
// structural hash ignores it).
struct Operator {
  OpType type = OpType::Identity;
  Attributes attrs;
  std::string name;

  bool operator==(const Operator&) const = default;
};

}  // namespace unity
