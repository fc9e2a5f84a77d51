#include "unity/rules/z3_info.h"

#include <z3.h>

#include <fmt/format.h>

namespace unity::rules {

std::string z3_version() {
  unsigned major = 0, minor = 0, build = 0, revision = 0;
  Z3_get_version(&major, &minor, &build, &revision);
  return fmt::format("{}.{}.{}", major, minor, build);
}

}  // namespace unity::rules
