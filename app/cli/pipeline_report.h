#pragma once
// How `optimize` and `show` print a pipeline layout: the layout, schedule and memory savers, and
// with `costs` each chunk's layers and times and each pipeline rank's memory by kind.
#include "unity/core/pipeline/pipeline_planner.h"

namespace unity::cli {

// `causal_attention`: the model has one, so the throughput says how it counts it (flop_count.h).
void print_pipeline(const PipelinePlan& p, bool costs, bool causal_attention);

}  // namespace unity::cli
