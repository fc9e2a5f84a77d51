#pragma once
// Training a pipelined plan (Plan::pipeline). Each rank runs the model chunks of its pipeline stage
// for its data-parallel copy, micro-batch by micro-batch in the 1F1B (or interleaved) order of
// pipeline_schedule.h. Activations and their gradients go point to point between stages; weight
// gradients accumulate over the micro-batches, are summed over the copies (all-reduce, or ZeRO's
// reduce-scatter) and one optimizer step follows: the update one rank makes with the whole batch.
// Activation recomputation keeps only each chunk's input per micro-batch in flight and runs its
// forward again before the backward; ZeRO 1 updates a 1/dp shard of the weights and all-gathers
// them, ZeRO 2 also reduce-scatters the gradients after every micro-batch, ZeRO 3 also all-gathers
// the weights before every pass.
#include <string>

#include "unity/core/pcg/graph.h"
#include "unity/core/plan/plan.h"
#include "unity/executor/training.h"

namespace unity::executor {

// Throws LoweringError (naming what is missing) when the executor cannot run the pipelined plan
// on `ranks` ranks.
void check_pipeline_run(const Plan& plan, int ranks);

// The model a pipelined plan trains, in the dtype the executor computes in (float32: fp16 and
// bf16 plans run in float32), which is also what the one-rank reference of --check trains.
Graph pipeline_model(const Plan& plan);

// Pipeline stage and data-parallel copy of `rank` (tensor parallelism 1: one device a replica).
struct PipelinePosition {
  int stage = 0;
  int copy = 0;
};
PipelinePosition pipeline_position(const PipelinePlan& p, int rank);

// Every rank calls this with the same plan; like train(), the losses and times are agreed on by all
// ranks, the final weights (collect_weights) land on rank 0, and result.pipeline holds what the
// run measured per stage.
TrainingResult train_pipeline(const Plan& plan, const TrainingOptions& options,
                              DeviceBackend& backend, Communicator& comm);

}  // namespace unity::executor
