#pragma once
// The project schema: an ordered list of forward migrations. PRAGMA user_version is the number of
// migrations a file has had; opening an older file applies the missing ones in one transaction.
#include <string_view>
#include <vector>

namespace unity::projects::detail {

class Connection;

struct Migration {
  int version;               // user_version after this step
  std::string_view summary;  // what the step adds, for docs and messages
  std::string_view sql;
};

const std::vector<Migration>& migrations();
int latest_schema_version();

// Applies every migration newer than the file's user_version inside one IMMEDIATE transaction
// (re-reading the version under the write lock, so two processes opening the same old file migrate
// it once). Returns the version the file has afterwards. `target_version` (tests only: files of an
// older version) stops early; 0 means the latest.
int migrate(Connection& connection, int target_version = 0);

}  // namespace unity::projects::detail
