#pragma once
// The graph of a Hugging Face config's model (hf_config.h), built by the zoo's decoder builders:
// what a config.json given as a MODEL becomes.
#include <cstdint>

#include "unity/core/hf/hf_config.h"
#include "unity/core/pcg/graph.h"
#include "unity/core/zoo/model_zoo.h"

namespace unity::hf {

// The graph of `config` with global batch `batch` (> 0) and the sequence `resize.seq`, else the
// config's max_position_embeddings; `resize.layers` changes the depth. The other family size flags
// are refused (InputError): a config's sizes are changed in the config. Float tensors are in the
// config's torch_dtype (bfloat16 where it names none). Throws InputError for a mixture-of-experts
// architecture (no MoE operator yet) and for a config without a sequence length and no --seq.
Graph build_hf_model(const HfConfig& config, std::int64_t batch,
                     const zoo::TransformerResize& resize = {});

}  // namespace unity::hf
