#pragma once
// One rank's training iterations of a pipelined plan (pipeline_rank.h holds what it runs): the
// schedule's passes in order, activations and gradients between stages (asynchronous sends, one tag
// each) and between the pieces of a chunk inside the stage replica, then at the flush the weight
// gradients summed over the copies (all-reduce or ZeRO's reduce-scatter) and the optimizer step.
#include <memory>
#include <vector>

#include "pipeline_rank.h"

namespace unity::executor::detail {

// What one rank measured in one iteration.
struct Iteration {
  double loss = 0;                 // this rank's share of the iteration's loss
  double forward = 0;              // seconds computing forwards
  double backward = 0;             // and backwards (with recomputation)
  double idle = 0;                 // waiting for messages from other stages
  double start = 0;                // seconds on this machine's steady clock when it began
  std::vector<TimelineBox> boxes;  // seconds from `start`
};

class PipelineRun {
 public:
  PipelineRun(PipelineRank& r, DeviceBackend& backend, Communicator& comm,
              const TrainingOptions& options);
  ~PipelineRun();
  Iteration iterate(int it);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace unity::executor::detail
