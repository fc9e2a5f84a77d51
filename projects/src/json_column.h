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

}  // namespace unity::projects::detail
