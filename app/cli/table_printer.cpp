#include "table_printer.h"

#include <algorithm>

#include <fmt/format.h>

namespace unity::cli {

void Table::print() const {
  std::vector<std::size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const bool last = i + 1 == row.size();
      // Numbers read best right-aligned; the first column (names) and the last (text) left-aligned.
      const bool right = i > 0 && !last;
      if (right)
        line += fmt::format("{:>{}}", row[i], width[i]);
      else if (last)
        line += row[i];
      else
        line += fmt::format("{:<{}}", row[i], width[i]);
      if (!last) line += "  ";
    }
    fmt::print("{}\n", line);
  };
  emit(header_);
  for (const auto& r : rows_) emit(r);
}

std::string human_count(std::int64_t n) {
  if (n >= 1'000'000'000) return fmt::format("{:.2f} G", n / 1e9);
  if (n >= 1'000'000) return fmt::format("{:.2f} M", n / 1e6);
  if (n >= 1'000) return fmt::format("{:.1f} k", n / 1e3);
  return std::to_string(n);
}

std::string human_bytes(std::int64_t n) {
  const double b = static_cast<double>(n);
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", n);
}

}  // namespace unity::cli
