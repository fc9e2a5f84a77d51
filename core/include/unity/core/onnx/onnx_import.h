#pragma once
// ONNX import: folds constants and shape arithmetic, maps ONNX operators to ours, recognises the
// decomposed LayerNorm/GELU that exporters emit, and infers every shape. Unsupported operators end
// in one InputError that lists each unsupported op type with a node name.
#include <cstdint>
#include <filesystem>

#include "unity/core/pcg/graph.h"

namespace unity {

struct OnnxImportOptions {
  std::int64_t batch_size = 0;  // >0: replace a symbolic/unknown batch dimension with this size
};

Graph import_onnx(const std::filesystem::path& path, const OnnxImportOptions& options = {});

}  // namespace unity
