#pragma once
// Shipped rule files for tests. The hand-written ones (rules/*.json) serve tests that follow the
// paper's examples with the rules those examples name, or that need a search small enough to run to
// completion: the built-in set also holds the ~1,750 generated rules.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

// The .json files in `dir`, sorted (none when it is not a folder).
inline std::vector<std::string> rule_files_in(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

inline std::vector<std::string> hand_written_rule_files() {
  return rule_files_in(std::filesystem::path(UNITY_SOURCE_DIR) / "rules");
}
