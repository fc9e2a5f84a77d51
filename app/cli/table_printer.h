#pragma once
// Plain-text tables and human-readable numbers for CLI output.
#include <cstdint>
#include <string>
#include <vector>

namespace unity::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print() const;  // to stdout; the last column is left free-width

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

std::string human_count(std::int64_t n);  // 25.03 M
std::string human_bytes(std::int64_t n);  // 95.5 MiB

}  // namespace unity::cli
