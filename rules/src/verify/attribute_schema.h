#pragma once
// The attributes of each operator as the verifier sees them: an ordered list of typed slots, each
// with its default where the operator has one. An operator application in the logic takes its
// attribute slots as leading arguments (integers, reals, enum codes, list codes), then its tensor
// inputs.
#include <optional>
#include <string>
#include <vector>

#include "unity/core/pcg/attributes.h"
#include "unity/core/pcg/op_type.h"

namespace unity::rules::spec {

enum class AttrKind { Int, Real, Enum, List };

struct AttrSlot {
  std::string name;
  AttrKind kind = AttrKind::Int;
  std::vector<std::string> enum_values;  // Enum: code i stands for enum_values[i]
  std::optional<AttrValue> default_value;
  // Pool2D's stride defaults to its kernel: the slot whose value stands in when this one is absent.
  std::string default_from;
  // A source pattern that leaves this slot out matches only its default (Concat's pieces), as the
  // core's matcher does: rules written without it never rewrite what it changes.
  bool closed = false;
};

const std::vector<AttrSlot>& attribute_slots(OpType op);
int slot_index(OpType op, const std::string& name);  // -1 when the operator has no such attribute

// Enum strings and codes; an unknown string gets a code past the known ones (still distinct).
std::int64_t enum_code(const AttrSlot& slot, const std::string& value);
std::string enum_name(const AttrSlot& slot, std::int64_t code);

// Kernel, stride, padding and dilation accept one value for both spatial dims: [3] means [3, 3].
std::vector<std::int64_t> normalized_list(OpType op, const std::string& name,
                                          std::vector<std::int64_t> value);

}  // namespace unity::rules::spec
