#pragma once
// The ONNX operator coverage report (docs/onnx.md, between the coverage markers): per op type with
// node tests in ONNX's conformance suite, how many tests there are, how many import, how many
// evaluate equal to the expected outputs, and the most common reason why the others do not.
// test_onnx_backend_data.cpp computes the outcomes; this file only counts and writes them.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace unity::onnx_coverage {

// One node test. `why` is empty for a test that evaluated equal, else a phrase that starts with its
// group and a colon: "out of scope: control flow", "missing operator: TopK", ...
struct TestResult {
  std::string test;  // the test's folder
  std::string op;    // the ONNX op type under test ("Softmax (expanded)" for the expanded variant)
  bool imported = false;
  bool equal = false;
  std::string why;
  std::string detail;  // `why` with the importer's whole message, for the list of tests
};

inline constexpr const char* kBeginMarker = "<!-- coverage:begin -->";
inline constexpr const char* kEndMarker = "<!-- coverage:end -->";

// The group of a reason: the words before its first colon.
inline std::string reason_group(const std::string& why) { return why.substr(0, why.find(':')); }

// Most common first; equal counts in alphabetical order (the report must not depend on the order
// in which tests ran).
inline std::vector<std::pair<std::string, int>> by_count(const std::map<std::string, int>& counts) {
  std::vector<std::pair<std::string, int>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return sorted;
}

// The report as Markdown: a summary, then one row per op type in alphabetical order.
inline std::string markdown(const std::vector<TestResult>& results) {
  struct Row {
    int tests = 0, imported = 0, equal = 0;
    std::map<std::string, int> reasons;
  };
  std::map<std::string, Row> rows;
  std::map<std::string, int> groups;
  int imported = 0, equal = 0;
  for (const TestResult& r : results) {
    Row& row = rows[r.op];
    ++row.tests;
    row.imported += r.imported;
    row.equal += r.equal;
    imported += r.imported;
    equal += r.equal;
    if (!r.why.empty()) {
      ++row.reasons[r.why];
      ++groups[reason_group(r.why)];
    }
  }
  int complete = 0;
  for (const auto& [op, row] : rows) complete += row.equal == row.tests;
  std::ostringstream out;
  out << rows.size() << " op types have node tests; " << complete << " pass all of them. "
      << results.size() << " tests: " << imported << " import, " << equal
      << " evaluate equal to the expected outputs.\n\n";
  out << "Why the other " << results.size() - static_cast<std::size_t>(equal) << " tests do not:";
  const char* separator = " ";
  for (const auto& [group, n] : by_count(groups)) {
    out << separator << group << " " << n;
    separator = ", ";
  }
  out << ".\n\n| op | tests | import | equal | why not |\n|---|---:|---:|---:|---|\n";
  for (const auto& [op, row] : rows) {
    std::string why;
    if (!row.reasons.empty()) {
      why = by_count(row.reasons).front().first;
      if (row.reasons.size() > 1) why += ", +" + std::to_string(row.reasons.size() - 1) + " more";
    }
    out << "| " << op << " | " << row.tests << " | " << row.imported << " | " << row.equal << " | "
        << why << " |\n";
  }
  return out.str();
}

inline std::optional<std::string> read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The text between the markers, without the newlines that end the marker lines; nullopt when the
// file or a marker is missing.
inline std::optional<std::string> docs_section(const std::string& docs) {
  const auto begin = docs.find(kBeginMarker);
  const auto end = docs.find(kEndMarker);
  if (begin == std::string::npos || end == std::string::npos || end < begin) return std::nullopt;
  const auto from = docs.find('\n', begin);
  if (from == std::string::npos || from + 1 > end) return std::nullopt;
  return docs.substr(from + 1, end - from - 1);
}

// Writes `section` between the markers of `file`; false when the file or a marker is missing.
inline bool replace_docs_section(const std::filesystem::path& file, const std::string& section) {
  const auto docs = read_file(file);
  if (!docs || !docs_section(*docs)) return false;
  const auto from = docs->find('\n', docs->find(kBeginMarker)) + 1;
  const auto end = docs->find(kEndMarker);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << docs->substr(0, from) << section << docs->substr(end);
  return static_cast<bool>(out);
}

}  // namespace unity::onnx_coverage
