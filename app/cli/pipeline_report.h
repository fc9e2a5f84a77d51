#pragma once
// How `optimize` and `show` print a pipeline layout: the layout, schedule and memory savers, and
// with `costs` each chunk's layers and times and each pipeline rank's memory by kind.
#include "unity/core/pipeline/pipeline_planner.h"

namespace unity::cli {

void print_pipeline(const PipelinePlan& p, bool costs);

}  // namespace unity::cli
