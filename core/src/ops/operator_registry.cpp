#include <array>
#include <cstdlib>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/ops/operator_definition.h"

namespace unity {
namespace {

#define UNITY_NAME_ENTRY(name) #name,
constexpr std::array kListedNames{UNITY_OPERATORS(UNITY_NAME_ENTRY)};
#undef UNITY_NAME_ENTRY

// Built on first use, so that no definition depends on another file's static initialisation.
const std::array<const OperatorDefinition*, kListedNames.size()>& table() {
#define UNITY_DEFINITION_ENTRY(name) &define_operator<OpType::name>(),
  static const std::array<const OperatorDefinition*, kListedNames.size()> t{
      UNITY_OPERATORS(UNITY_DEFINITION_ENTRY)};
#undef UNITY_DEFINITION_ENTRY
  static const bool checked = [] {
    for (std::size_t i = 0; i < t.size(); ++i)
      if (static_cast<std::size_t>(t[i]->info.type) != i || t[i]->info.name != kListedNames[i]) {
        // A definition registered under another operator's line: a programming error.
        fmt::print(stderr, "operator registry: line {} ({}) defines {}\n", i, kListedNames[i],
                   t[i]->info.name);
        std::abort();
      }
    return true;
  }();
  (void)checked;
  return t;
}

}  // namespace

const OperatorDefinition& operator_definition(OpType type) {
  return *table()[static_cast<std::size_t>(type)];
}

std::span<const OperatorDefinition* const> operator_definitions() { return table(); }

const std::vector<PointwiseParameter>& declared_parameters(OpType type) {
  static const std::vector<PointwiseParameter> none;
  if (const PointwiseFunction* f = pointwise_function(type)) return f->parameters;
  if (const AxisFunction* f = axis_function(type)) return f->parameters;
  return none;
}

std::vector<double> operator_parameters(const Operator& op) {
  std::vector<double> values;
  for (const auto& p : declared_parameters(op.type)) {
    const std::string name(p.name);
    values.push_back(p.default_value ? op.attrs.get_double(name, *p.default_value)
                                     : op.attrs.get_double(name));
  }
  return values;
}

}  // namespace unity
