#include "version_info.h"

#include <fmt/format.h>

#include "unity/executor/backends.h"
#include "unity/projects/sqlite_info.h"
#include "unity/rules/z3_info.h"

namespace unity::cli {

std::string version_text() {
  std::string s = fmt::format("unity {}\nZ3 {}\nSQLite {}", UNITY_VERSION, rules::z3_version(),
                              projects::sqlite_version());
  for (const auto& b : executor::available_backends())
    s += fmt::format("\nbackend {}: {} ({})", b.name, b.available ? "available" : "unavailable",
                     b.detail);
  return s;
}

}  // namespace unity::cli
