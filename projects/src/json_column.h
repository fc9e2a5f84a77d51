#pragma once
// JSON stored in TEXT columns: parsed on the way out, with a damaged value reported as a damaged
// project (InputError naming the file) rather than a crash.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "sqlite_db.h"

namespace unity::projects::detail {

nlohmann::json parse_json_column(const Statement& statement, int column,
                                 const std::filesystem::path& file, const char* what);

// 16 lower-case hex digits, as models.structural_hash and machines.content_hash store them.
std::string hex64(std::uint64_t value);

// FNV-1a over the bytes: a stable content hash (std::hash may differ between builds).
std::uint64_t fnv1a64(std::string_view bytes);

}  // namespace unity::projects::detail
