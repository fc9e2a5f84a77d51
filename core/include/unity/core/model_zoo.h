#pragma once
// The models of the paper's evaluation (Table 1, section 6.1) at the paper's sizes, plus the MLP of
// its Figure 1. Batch sizes are per device, as in the paper.
#include <cstdint>
#include <string>
#include <vector>

#include "unity/core/graph.h"

namespace unity::zoo {

struct ModelInfo {
  std::string name;
  std::string description;
  std::int64_t default_batch;  // per device
};

const std::vector<ModelInfo>& models();
bool has_model(const std::string& name);
// batch <= 0 means the model's default per-device batch. Throws InputError on an unknown name,
// listing the known ones.
Graph build(const std::string& name, std::int64_t batch = 0);

}  // namespace unity::zoo
