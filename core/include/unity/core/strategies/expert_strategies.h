#pragma once
// Expert-designed parallelisations, the baselines of the paper's evaluation (6.2): Megatron-LM for
// transformers (attention heads and MLP pairs tensor-parallel inside a node, data parallel across),
// Neo for recommendation models (embedding tables model-parallel, the dense layers data-parallel),
// and data parallelism, which applies to every model.
#include <string>
#include <vector>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/graph.h"
#include "unity/core/search/substitution_search.h"

namespace unity {

struct ExpertStrategy {
  std::string name;  // "megatron tp2 x dp3", "neo", "data-parallel x6"
  Graph graph;       // the complete PCG
  std::vector<AppliedSubstitution>
      applied;  // built-in rules it applied (none for plans built directly)
};

// Every expert strategy that applies to `model` on `machine`, for each degree combination they
// allow; `unity optimize --mode expert` keeps the fastest, as the paper does for its baselines.
std::vector<ExpertStrategy> expert_strategies(const Graph& model, const MachineSpec& machine);

// Megatron-LM's tensor parallelism of degree `tp` on all the devices of one stage replica: heads
// and MLP pairs as above, and what Megatron-LM splits besides them, the vocabulary of the head and
// of the embedding table. A graph none of these apply to stays serial (tp 1: `serial` itself).
// A mixture-of-experts layer's experts split over the group by expert (Megatron-Core's expert
// parallelism inside the group, ETP 1), or with `experts_by_width` each expert's FFN width split
// as a dense MLP's (expert tensor parallelism: ETP = tp, Megatron-Core's default).
ExpertStrategy megatron_tensor_parallel(const Graph& serial, int tp, bool experts_by_width = false);

}  // namespace unity
