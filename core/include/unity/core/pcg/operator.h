#pragma once
#include <memory>
#include <string>

#include "unity/core/pcg/attributes.h"
#include "unity/core/pcg/op_type.h"
#include "unity/core/pcg/tensor_values.h"

namespace unity {

// One node's operation: its kind, its attributes and a human name (the name is not structure: the
// structural hash ignores it). A Constant also holds its values.
struct Operator {
  OpType type = OpType::Identity;
  Attributes attrs;
  std::string name;
  std::shared_ptr<const TensorValues> values = nullptr;

  bool operator==(const Operator& other) const {
    return type == other.type && attrs == other.attrs && name == other.name &&
           same_values(values, other.values);
  }
};

}  // namespace unity
