#pragma once
// ONNX import: folds constants and shape arithmetic, maps ONNX operators to ours, recognises the
// decomposed LayerNorm/GELU that exporters emit, and infers every shape. Unsupported operators end
// in one InputError that lists each unsupported op type with a node name.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "unity/core/pcg/graph.h"

namespace unity {

struct OnnxImportOptions {
  std::int64_t batch_size = 0;  // >0: replace a symbolic/unknown batch dimension with this size
  // Initializers (names, or shell patterns such as "*.rotary.*") that are buffers, not parameters:
  // they become Constants holding their values instead of trained Weights. ONNX does not tell a
  // registered buffer from a parameter; each pattern must match an initializer.
  std::vector<std::string> constant_initializers = {};
};

Graph import_onnx(const std::filesystem::path& path, const OnnxImportOptions& options = {});

}  // namespace unity
