#pragma once
// A training plan: the PCG (with its parallel operators), the machine it was found for, each placed
// operator's machine view, and the predicted costs. `unity optimize --out` writes it, `unity show`
// and `unity run` read it. Format: docs/formats.md.
#include <algorithm>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/mapping/machine_mapping.h"
#include "unity/core/pcg/graph.h"
#include "unity/core/pipeline/pipeline_planner.h"
#include "unity/core/plan/model_shape.h"
#include "unity/core/search/substitution_search.h"

namespace unity {

struct PlanSummary {
  std::string model;
  std::string machine;
  int devices = 0;
  std::string mode;
  std::string optimizer = "sgd";
  double iteration_time_ms = 0;
  double compute_ms = 0;
  double communication_ms = 0;
  double communication_bytes = 0;
  double peak_memory_bytes = 0;
  bool fits_in_memory = false;
  // memory_verdict.h: "fits", "tight" or "does-not-fit", and the smallest device's capacity minus
  // the peak (negative: over)
  std::string memory_verdict = "does-not-fit";
  double memory_margin_bytes = 0;
  // The weights, gradients and optimizer state whole, and the devices of the smallest device's
  // memory they take fully sharded (memory_verdict.h: model_state_floor).
  double model_state_bytes = 0;
  int fewest_devices_for_state = 0;
  double search_seconds = 0;
  std::int64_t candidates_evaluated = 0;
  std::vector<AppliedSubstitution> substitutions_applied;
  std::vector<std::string> vetoed;  // rules the search was told never to apply (RULE[@NODE])
  std::vector<std::string> pinned;  // rules the search was told to apply (RULE[@NODE])
  // Where the plan comes from when it is not the search's own result: "data-parallel x6" when a
  // starting point beat everything the search found, "expert: ..." for the expert mode.
  std::string origin;
  int pieces = 1;                       // graph splitting: pieces searched separately
  int searches = 0;                     // substitution searches run
  std::string search_status;            // completed, budget, cancelled (empty: no search)
  std::int64_t operators = 0;           // compute operators
  std::int64_t parallel_operators = 0;  // parallel operators
  std::size_t mapping_subproblems = 0;
  // Where the compute operators' times come from: measured profiles (OptimizeOptions::profiles)
  // or the analytic roofline.
  std::int64_t measured_operators = 0;
  std::int64_t analytic_operators = 0;
  // Large-model training: the compute dtype, the pipeline (1 stage, 1 micro-batch when the plan is
  // not pipelined), memory savers, and throughput as Megatron-LM counts it (its Eq. 3: dense
  // FLOPs x 3, plus the recomputed forward passes).
  std::string dtype = "float32";
  int pipeline_stages = 1;
  int micro_batches = 1;
  double bubble_fraction = 0;
  std::string recompute = "none";
  std::string recompute_modules;  // what selective recomputation runs again ("" otherwise)
  int zero_stage = 0;
  // Mixture-of-experts layouts (pipeline_planner.h), as Megatron-Core folds them into a stage's
  // devices (TP x CP x DP = ETP x EP x EDP; PipelinePlan::expert_grid): expert parallelism, the
  // experts' own tensor parallelism and data parallelism; context parallelism (each sequence over
  // cp devices), and the bytes all devices send in the experts' all-to-alls per iteration.
  int ep = 1, etp = 1, edp = 1, cp = 1;
  double alltoall_bytes = 0;
  double cp_bytes = 0;  // bytes context parallelism's key/value exchange sends per iteration
  double model_flops_per_iteration = 0;
  std::string flop_count = "full";  // how it counts a causal attention (flop_count.h)
  double tflops_per_device = 0;
  // A decoder-only transformer's shape (model_shape.h), what `unity export` writes a launch from;
  // none for other models and in plans written before it.
  std::optional<ModelShape> model_shape;
};

struct Plan {
  PlanSummary summary;
  MachineSpec machine;
  Graph pcg;  // a pipelined plan: the serial model (each segment kind's plan is in `pipeline`)
  MachineMapping mapping;  // a pipelined plan: its cost only, no views
  std::optional<PipelinePlan> pipeline;

  // Of each mixture-of-experts layer's experts, how many one device holds (0: no experts, or a
  // whole-graph plan, which spreads them by its own views).
  std::int64_t experts_per_device() const {
    return pipeline && pipeline->experts > 0
               ? pipeline->experts / std::max(1, pipeline->expert_parallel)
               : 0;
  }
};

// Byte counts as JSON integers (rounded; a count that is not finite stays a number, null).
nlohmann::json bytes_to_json(double bytes);
nlohmann::json bytes_to_json(const std::vector<double>& bytes);
// Weights, gradients, optimizer state, activations, workspace and their total, in bytes.
nlohmann::json memory_to_json(const MemoryBreakdown& m);
nlohmann::json summary_to_json(const PlanSummary& s);
// The layout, stages (layer ranges, times) and memory per pipeline rank by kind.
nlohmann::json pipeline_to_json(const PipelinePlan& p);
nlohmann::json plan_to_json(const Plan& plan);
// Reads a plan file's PCG, machine, views and summary; throws InputError naming the field.
Plan plan_from_json(const nlohmann::json& j);
bool is_plan_json(const nlohmann::json& j);

}  // namespace unity
