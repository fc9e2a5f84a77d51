#include "unity/core/plan/search_mode.h"

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity {
namespace {

constexpr SearchMode kModes[] = {SearchMode::DataParallel, SearchMode::Expert,
                                 SearchMode::Sequential, SearchMode::Joint};

}  // namespace

std::string_view to_string(SearchMode mode) {
  switch (mode) {
    case SearchMode::DataParallel:
      return "data-parallel";
    case SearchMode::Expert:
      return "expert";
    case SearchMode::Sequential:
      return "sequential";
    case SearchMode::Joint:
      return "joint";
  }
  return "joint";
}

SearchMode search_mode_from_string(std::string_view name) {
  for (const SearchMode m : kModes)
    if (to_string(m) == name) return m;
  throw InputError(
      fmt::format("unknown mode '{}' (expected {})", name, fmt::join(search_mode_names(), ", ")));
}

const std::vector<std::string>& search_mode_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const SearchMode m : kModes) out.emplace_back(to_string(m));
    return out;
  }();
  return names;
}

}  // namespace unity
