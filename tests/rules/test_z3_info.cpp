#include <gtest/gtest.h>

#include <regex>

#include "unity/rules/z3_info.h"

// The verifier's axioms are written for Z3 4.x; a different major version must be noticed.
TEST(Z3Info, ReportsAFourDotVersion) {
  const std::string version = unity::rules::z3_version();
  EXPECT_TRUE(std::regex_match(version, std::regex(R"(4\.\d+\.\d+)"))) << version;
}
