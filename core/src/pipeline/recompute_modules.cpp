#include "unity/core/pipeline/recompute_modules.h"

#include <array>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "unity/core/errors.h"

namespace unity {
namespace {

constexpr std::array<std::pair<std::string_view, unsigned>, 4> kNames{{
    {"core_attn", RecomputeModules::kCoreAttention},
    {"layernorm", RecomputeModules::kLayerNorm},
    {"moe_act", RecomputeModules::kMoeActivation},
    {"moe", RecomputeModules::kMoe},
}};

// "core_attn, layernorm, moe_act, moe", for messages.
std::string known_names() {
  std::vector<std::string_view> all;
  for (const auto& [name, bit] : kNames) all.push_back(name);
  return fmt::format("{}", fmt::join(all, ", "));
}

}  // namespace

std::string to_string(RecomputeModules modules) {
  std::string text;
  for (const auto& [name, bit] : kNames)
    if (modules.has(bit)) text += (text.empty() ? "" : ",") + std::string(name);
  return text;
}

RecomputeModules recompute_modules_from_string(std::string_view names) {
  RecomputeModules modules{0};
  std::size_t start = 0;
  while (start <= names.size()) {
    std::size_t end = names.find_first_of(", ", start);
    if (end == std::string_view::npos) end = names.size();
    const std::string_view name = names.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    bool known = false;
    for (const auto& [known_name, bit] : kNames)
      if (name == known_name) {
        modules.bits |= bit;
        known = true;
      }
    if (!known)
      throw InputError(
          fmt::format("unknown recomputation module '{}' (expected {})", name, known_names()));
  }
  if (modules.bits == 0)
    throw InputError(fmt::format("no module named (expected {})", known_names()));
  return modules;
}

}  // namespace unity
