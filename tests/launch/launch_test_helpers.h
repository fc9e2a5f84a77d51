#pragma once
// Reading back what the launch writers wrote: a script's "--flag value" lines, a TOML's
// "key = value" lines by dotted name, and the check that every name is its framework's.
#include <algorithm>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "unity/core/launch/launch_writers.h"

namespace launch_test {

// "--flag value" (or "--flag") per line of a script's argument arrays; value "" for a switch.
inline std::map<std::string, std::string> script_args(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  --", 0) != 0) continue;
    const auto space = line.find(' ', 2);
    out[line.substr(2, space == std::string::npos ? std::string::npos : space - 2)] =
        space == std::string::npos ? "" : line.substr(space + 1);
  }
  return out;
}

// "section.key" -> value text, for a TOML's single-line keys (and the first line of others).
inline std::map<std::string, std::string> toml_keys(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string section;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line[0] == ' ') continue;
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const auto eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    std::string value = line.substr(eq + 3);
    if (const auto hash = value.find("  #"); hash != std::string::npos) value.resize(hash);
    out[section + "." + line.substr(0, eq)] = value;
  }
  return out;
}

// Every name the file sets is one its framework's sources define.
inline void expect_known_names(const unity::launch::LaunchFile& f) {
  ASSERT_FALSE(f.names.empty());
  for (const auto& [list, name] : f.names) {
    const auto names = unity::launch::accepted_names(list);
    EXPECT_TRUE(std::find(names.begin(), names.end(), name) != names.end())
        << name << " is not in " << unity::launch::names_source(list);
  }
}

}  // namespace launch_test
