#pragma once
// `unity optimize`: turns a model and a machine into a plan. Modes: joint (algebraic and parallel
// substitutions searched together, paper 5), sequential (algebraic rules on one device, then parallel
// rules on the result: "TASO then FlexFlow"), data-parallel.
#include <string>
#include <vector>

#include "unity/core/plan.h"
#include "unity/core/search_observer.h"

namespace unity {

struct OptimizeOptions {
  std::string mode = "data-parallel";
  std::string optimizer = "sgd";            // sgd, sgd-momentum, adam
  double alpha = 1.05;                      // prune candidates worse than alpha x the best
  std::int64_t budget = 200;                // candidates costed per search phase
  std::vector<std::string> rule_files;      // empty: the built-in rules (rules/*.json)
  std::vector<std::string> pins;            // rules applied wherever they match, in every plan
  std::vector<std::string> vetoes;          // rules never applied
  SearchObserver* observer = nullptr;       // every search event
  const CancelFlag* cancel = nullptr;       // set from another thread to stop with the best so far
};

// Loads MODEL for a machine of `devices` devices: zoo models are built with the paper's per-device
// batch times the device count (global batch); model files keep their batch as the global batch.
Graph load_model_for_devices(const std::string& spec, int devices);

// Throws InputError for an unknown mode, rule file or rule name.
Plan optimize_plan(const Graph& model, const MachineSpec& machine, const OptimizeOptions& options);

}  // namespace unity
