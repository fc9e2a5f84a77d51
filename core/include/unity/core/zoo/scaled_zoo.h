#pragma once
// Reduced versions of the zoo's models for CPU runs (`unity run MODEL --scale S`): the same
// structure with widths, table sizes, image size and depth shrunk by `scale` (0 < scale <= 1; 1 is
// the model of zoo::build). Added by the executor; only models whose structure scales cleanly are
// offered.
#include <cstdint>
#include <string>
#include <vector>

#include "unity/core/pcg/graph.h"

namespace unity::zoo {

// Names build_scaled accepts.
const std::vector<std::string>& scalable_models();
// `batch` is the global batch (<= 0: the model's default per-device batch). Throws InputError for a
// scale outside (0, 1] or a model that cannot be scaled (listing those that can).
Graph build_scaled(const std::string& name, std::int64_t batch, double scale);

}  // namespace unity::zoo
