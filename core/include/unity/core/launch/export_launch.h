#pragma once
// `unity export PLAN --to megatron|torchtitan|deepspeed [--nearest]`: a plan's launch file for a
// framework, or why the framework cannot run the plan. With `nearest`, a plan a framework cannot
// run is planned again as the Megatron-style layout closest to it that the framework can run
// (`--mode expert` at the plan's TP, PP, micro-batches and memory savers where those can be kept,
// fewer of them fixed where not), and that layout's launch is written, its predicted cost beside
// the plan's.
#include <optional>
#include <string>
#include <vector>

#include "unity/core/launch/launch_writers.h"
#include "unity/core/plan/plan.h"

namespace unity::launch {

struct ExportRequest {
  Framework framework = Framework::Megatron;
  bool nearest = false;
};

struct ExportResult {
  LaunchFile file;
  LaunchSpec spec;                   // what the file launches
  std::vector<std::string> refused;  // why the plan itself was not written (nearest only)
  std::optional<Plan> nearest;       // the layout written instead of the plan (nearest only)
};

// Throws InputError naming what the framework cannot express, when `request.nearest` is off or
// no nearby layout exists either.
ExportResult export_launch(const Plan& plan, const ExportRequest& request);

// The serial model of a plan: its PCG where the plan is a pipeline layout (which keeps the model
// serial), else the decoder its summary's model shape describes, rebuilt in the plan's dtype.
// nullopt where neither exists.
std::optional<Graph> serial_model_of(const Plan& plan);

}  // namespace unity::launch
