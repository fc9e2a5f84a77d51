#pragma once
// The model JSON format (docs/formats.md). Loading re-infers every shape and rejects a file whose
// stored shapes disagree, naming the node.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "unity/core/pcg/graph.h"

namespace unity {

nlohmann::json graph_to_json(const Graph& graph);
Graph graph_from_json(const nlohmann::json& j);  // throws InputError naming the field

nlohmann::json shape_to_json(const ParallelTensorShape& shape);
ParallelTensorShape shape_from_json(const nlohmann::json& j);

// An integer a file gives: a JSON integer within T's range, else an InputError naming `what`.
// (json's own get<int>() converts a float, or an integer too large for T, with undefined or
// wrapped results.)
std::int64_t json_integer_in(const nlohmann::json& v, std::string_view what, std::int64_t lowest,
                             std::int64_t highest);
template <typename T>
T json_integer(const nlohmann::json& v, std::string_view what) {
  return static_cast<T>(
      json_integer_in(v, what, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
}
// The integer field `key` of the object `j`, or `fallback` where it has none.
template <typename T>
T json_integer_or(const nlohmann::json& j, const char* key, T fallback, std::string_view where) {
  const auto it = j.find(key);
  return it == j.end() ? fallback : json_integer<T>(*it, fmt::format("{}.{}", where, key));
}

// A value a run measured (a loss, a time): JSON has no infinity or NaN, and nlohmann writes them as
// null, so a run whose loss diverged reads back NaN there instead of failing to read.
double json_measured(const nlohmann::json& v);
std::vector<double> json_measured_list(const nlohmann::json& v);
double json_measured_or(const nlohmann::json& j, const char* key, double fallback);

// Reads a JSON file; throws InputError naming the file when it is missing or not JSON.
nlohmann::json read_json_file(const std::filesystem::path& path);
// Writes to a temporary file beside `path` and renames it, so a failure leaves nothing
// half-written.
void write_text_file_atomic(const std::filesystem::path& path, const std::string& text);

}  // namespace unity
