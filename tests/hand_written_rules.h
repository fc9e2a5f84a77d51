#pragma once
// The hand-written rule files (rules/*.json), for tests that follow the paper's examples with the
// rules those examples name, or that need a search small enough to run to completion: the built-in
// set also holds the ~1,750 generated rules.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

inline std::vector<std::string> hand_written_rule_files() {
  std::vector<std::string> out;
  for (const auto& e :
       std::filesystem::directory_iterator(std::filesystem::path(UNITY_SOURCE_DIR) / "rules"))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}
