#pragma once
// The model JSON format (docs/formats.md). Loading re-infers every shape and rejects a file whose
// stored shapes disagree, naming the node.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "unity/core/graph.h"

namespace unity {

nlohmann::json graph_to_json(const Graph& graph);
Graph graph_from_json(const nlohmann::json& j);  // throws InputError naming the field

nlohmann::json shape_to_json(const ParallelTensorShape& shape);
ParallelTensorShape shape_from_json(const nlohmann::json& j);

// Reads a JSON file; throws InputError naming the file when it is missing or not JSON.
nlohmann::json read_json_file(const std::filesystem::path& path);
// Writes to a temporary file beside `path` and renames it, so a failure leaves nothing half-written.
void write_text_file_atomic(const std::filesystem::path& path, const std::string& text);

}  // namespace unity
