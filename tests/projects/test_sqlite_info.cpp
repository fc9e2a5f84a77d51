#include <gtest/gtest.h>

#include <regex>

#include "unity/projects/sqlite_info.h"

// Project files use WAL and other SQLite 3 features.
TEST(SqliteInfo, ReportsAThreeDotVersion) {
  const std::string version = unity::projects::sqlite_version();
  EXPECT_TRUE(std::regex_match(version, std::regex(R"(3\.\d+\.\d+)"))) << version;
}
