#pragma once
// `unity optimize`: turns a model and a machine into a plan. Modes: joint (algebraic and parallel
// substitutions searched together, paper 5), sequential (algebraic rules on one device, then
// parallel rules on the result: "TASO then FlexFlow"), data-parallel, expert (Megatron-style tensor
// + data parallelism for transformers, Neo-style for recommendation models, data parallelism
// otherwise).
#include <memory>
#include <string>
#include <vector>

#include "unity/core/cost/cost_model.h"
#include "unity/core/cost/flop_count.h"
#include "unity/core/pipeline/training_setup.h"
#include "unity/core/plan/plan.h"
#include "unity/core/search/search_observer.h"
#include "unity/core/zoo/model_zoo.h"

namespace unity {

struct OptimizeOptions {
  std::string mode = "data-parallel";
  // sgd, sgd-momentum, adam; empty: adam for a model that computes in fp16 or bf16 (mixed-precision
  // recipes train with Adam), sgd otherwise (the paper's setting).
  std::string optimizer;
  double alpha = 1.05;                      // prune candidates worse than alpha x the best
  std::int64_t budget = 200;                // candidates costed per substitution search
  std::vector<std::string> rule_files;      // empty: the built-in rules (rules/*.json)
  std::shared_ptr<const RuleSet> rule_set;  // rules already loaded (instead of rule_files)
  std::vector<std::string> pins;            // "RULE" or "RULE@NODE": applied wherever it matches
  std::vector<std::string> vetoes;          // "RULE" or "RULE@NODE": never applied there
  bool split = true;                        // graph splitting (paper 5.3)
  int min_piece = 10;                       // smallest piece graph splitting cuts off
  bool cache = true;                        // mapping cache shared between candidates (5.2)
  int beam = 4;                             // partitionings searched per cut
  SearchObserver* observer = nullptr;       // every search event
  const CancelFlag* cancel = nullptr;       // set from another thread to stop with the best so far
  // > 0: the searches stop with their best so far after about this many seconds in all (search
  // status "time limit"), whatever is left of the budget. A graph the mapping DP finds hard
  // (DenseNet's blocks are not series-parallel) costs seconds per candidate; this bounds the wait.
  double time_limit_seconds = 0;
  // Measured op times that override the analytic cost model (a project's op profiles); null: none.
  std::shared_ptr<const ProfileSource> profiles;
  // How the plan's TFLOP/s count a causal attention (flop_count.h): the figure, not the time.
  FlopCount flop_count = FlopCount::Full;
  // Large models: what the user fixed of the pipeline layout (--tp --pp --micro-batches ...). Not
  // empty: the plan is a pipeline layout (expert: Megatron-LM's, joint: searched segments).
  LayoutRequest layout;
  // Joint mode also costs the baselines its search starts from (data parallelism over every device
  // and the expert strategies) and returns one of them, with its origin, where it is faster than
  // what the search found. Off: the joint search's own plan (origin "joint search").
  bool baselines = true;
  // Joint and expert modes offer pipeline layouts to models with a chain of segments (off: the
  // paper's search without pipeline parallelism, as `--no-pipeline`).
  bool pipelines = true;
};

// The optimizer a plan of `model` is costed with (OptimizeOptions::optimizer resolved).
std::string resolved_optimizer(const Graph& model, const OptimizeOptions& options);

// Loads MODEL for a machine of `devices` devices: zoo models are built with the paper's per-device
// batch times the device count (global batch); model files keep their batch as the global batch.
// A Hugging Face config (hf/hf_config.h) gets one sequence per device. `batch` > 0 overrides all
// of these (the CLI's --batch).
// `resize` changes a gpt or llama family member's sizes, and a config's --seq and --layers
// (InputError for other models and flags).
Graph load_model_for_devices(const std::string& spec, int devices, std::int64_t batch = 0,
                             const zoo::TransformerResize& resize = {});

// Throws InputError for an unknown mode, rule file or rule name.
Plan optimize_plan(const Graph& model, const MachineSpec& machine, const OptimizeOptions& options);

}  // namespace unity
