#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/rules/rule.h"

namespace unity {

std::optional<RuleTensorRef> parse_rule_ref(std::string_view ref) {
  const auto colon = ref.find(':');
  RuleTensorRef out{std::string(ref.substr(0, colon)), 0};
  if (out.name.empty()) return std::nullopt;
  if (colon == std::string_view::npos) return out;
  const std::string_view index = ref.substr(colon + 1);
  // At most six digits: an output index, never a number that overflows an int.
  if (index.empty() || index.size() > 6) return std::nullopt;
  for (const char c : index) {
    if (c < '0' || c > '9') return std::nullopt;
    out.output = out.output * 10 + (c - '0');
  }
  return out;
}

RuleTensorRef rule_ref(std::string_view ref) {
  if (auto parsed = parse_rule_ref(ref)) return *parsed;
  throw InputError(
      fmt::format("'{}' is not a tensor reference (a name, or name:index for one output)", ref));
}

}  // namespace unity
