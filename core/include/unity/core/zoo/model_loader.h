#pragma once
// Resolves a MODEL argument of the CLI: a zoo name, a .onnx file or a model .json file.
#include <cstdint>
#include <string>

#include "unity/core/pcg/graph.h"

namespace unity {

Graph load_model(const std::string& spec, std::int64_t batch = 0);

}  // namespace unity
