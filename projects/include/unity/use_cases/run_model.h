#pragma once
// Plan a model for a run: the model a run trains when it is given a MODEL instead of a plan
// (`unity run MODEL`), or when the explorer's run view reduces the model it planned so that it
// trains on this machine's CPU ranks. One place decides what --scale, --batch, the transformer
// resizes and --loss mean.
#include <cstdint>
#include <string>

#include "unity/core/pcg/graph.h"
#include "unity/core/zoo/model_zoo.h"

namespace unity::use_cases {

struct RunModel {
  std::string target;             // a zoo name, .onnx or model .json
  int devices = 1;                // the devices it is planned for
  std::int64_t batch = 0;         // global batch; 0: the zoo's per-device batch x devices
  double scale = 1.0;             // (0, 1]: shrink a zoo model's widths, tables and depth
  zoo::TransformerResize resize;  // the gpt and llama families' --layers --hidden ...
  std::string loss;               // a model without a loss: cross-entropy or mse ("" chooses)
  bool attach_loss = true;        // false: a model without a loss stays so (inference)
};

// The graph a run trains; `loss_note` says which loss was attached to a model without one. Throws
// InputError for a scale of a model that is not in the zoo, or a scale given with a resize.
Graph build_run_model(const RunModel& request, std::string* loss_note = nullptr);

}  // namespace unity::use_cases
