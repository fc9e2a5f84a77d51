#pragma once
// Resolves a MODEL argument of the CLI: a zoo name, a .onnx file, a model .json file, or a
// Hugging Face config.json (the file, or a folder holding it: hf/hf_config.h).
#include <cstdint>
#include <optional>
#include <string>

#include "unity/core/hf/hf_config.h"
#include "unity/core/pcg/graph.h"
#include "unity/core/zoo/model_zoo.h"

namespace unity {

Graph load_model(const std::string& spec, std::int64_t batch = 0);

// The same with the family size flags (`resize`, InputError for a model that takes none) and the
// devices a Hugging Face config's default batch (one sequence per device) is multiplied by.
Graph load_model(const std::string& spec, std::int64_t batch, const zoo::TransformerResize& resize,
                 int devices);

// The Hugging Face config MODEL names (the file, or a folder holding config.json); nullopt when it
// names another kind of model. Throws InputError as read_hf_config does for a config it cannot
// read.
std::optional<hf::HfConfig> hf_config_of(const std::string& spec);

}  // namespace unity
