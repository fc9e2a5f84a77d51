#pragma once
// Passes that complete a lowered program once its tasks and fragments exist.
#include "unity/executor/program.h"

namespace unity::executor::detail {

// One shard per distinct (weight, rank, region) that tasks read.
void collect_weight_shards(Program& p);
// Gradient all-reduce groups: weight cells held by more than one rank.
void plan_gradient_syncs(Program& p);
// BatchNorm tasks that share batch statistics across sample partitions.
void plan_statistics_groups(Program& p);
// Collectives for AllReduce nodes and Reduce+Partition pairs whose pieces line up.
void plan_collectives(Program& p);

}  // namespace unity::executor::detail
