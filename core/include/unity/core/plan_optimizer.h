#pragma once
// `unity optimize`: turns a model and a machine into a plan. Modes that exist so far: data-parallel.
#include <functional>
#include <string>

#include "unity/core/plan.h"

namespace unity {

struct OptimizeOptions {
  std::string mode = "data-parallel";
  std::string optimizer = "sgd";  // sgd, sgd-momentum, adam
};

// Loads MODEL for a machine of `devices` devices: zoo models are built with the paper's per-device
// batch times the device count (global batch); model files keep their batch as the global batch.
Graph load_model_for_devices(const std::string& spec, int devices);

Plan optimize_plan(const Graph& model, const MachineSpec& machine, const OptimizeOptions& options);

}  // namespace unity
