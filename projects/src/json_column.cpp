#include "json_column.h"

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity::projects::detail {

nlohmann::json parse_json_column(const Statement& statement, int column,
                                 const std::filesystem::path& file, const char* what) {
  if (statement.is_null(column)) return nullptr;
  const std::string text = statement.column_text(column);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("'{}': the project file is damaged ({} is not valid JSON: {})",
                                 file.string(), what, e.what()));
  }
}

}  // namespace unity::projects::detail
