#include "unity/core/content_hash.h"

#include <fmt/format.h>

namespace unity {

std::string hex64(std::uint64_t value) { return fmt::format("{:016x}", value); }

}  // namespace unity
