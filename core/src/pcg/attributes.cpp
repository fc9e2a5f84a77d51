#include "unity/core/pcg/attributes.h"

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity {
namespace {

template <typename T>
const T& get_typed(const std::map<std::string, AttrValue>& values, const std::string& name,
                   const char* type_name) {
  auto it = values.find(name);
  if (it == values.end()) throw ShapeError(fmt::format("missing attribute '{}'", name));
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  throw ShapeError(
      fmt::format("attribute '{}' must be {}, got {}", name, type_name, to_string(it->second)));
}

}  // namespace

std::int64_t Attributes::get_int(const std::string& name) const {
  return get_typed<std::int64_t>(values_, name, "an integer");
}

std::int64_t Attributes::get_int(const std::string& name, std::int64_t fallback) const {
  return has(name) ? get_int(name) : fallback;
}

double Attributes::get_double(const std::string& name) const {
  auto it = values_.find(name);
  // An integer literal where a number is expected is fine ("rate": 0 in a hand-written file).
  if (it != values_.end())
    if (const auto* i = std::get_if<std::int64_t>(&it->second)) return static_cast<double>(*i);
  return get_typed<double>(values_, name, "a number");
}

double Attributes::get_double(const std::string& name, double fallback) const {
  return has(name) ? get_double(name) : fallback;
}

const std::string& Attributes::get_string(const std::string& name) const {
  return get_typed<std::string>(values_, name, "a string");
}

std::string Attributes::get_string(const std::string& name, const std::string& fallback) const {
  return has(name) ? get_string(name) : fallback;
}

const std::vector<std::int64_t>& Attributes::get_ints(const std::string& name) const {
  return get_typed<std::vector<std::int64_t>>(values_, name, "a list of integers");
}

std::vector<std::int64_t> Attributes::get_ints(const std::string& name,
                                               const std::vector<std::int64_t>& fallback) const {
  return has(name) ? get_ints(name) : fallback;
}

std::string to_string(const AttrValue& value) {
  struct Visitor {
    std::string operator()(std::int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return fmt::format("{}", v); }
    std::string operator()(const std::string& v) const { return "\"" + v + "\""; }
    std::string operator()(const std::vector<std::int64_t>& v) const {
      return fmt::format("[{}]", fmt::join(v, ", "));
    }
  };
  return std::visit(Visitor{}, value);
}

}  // namespace unity
