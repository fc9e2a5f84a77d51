#pragma once
// Training a pipelined plan on threads, one per rank, and the same model on one rank: what the
// pipeline tests compare.
#include "executor_test_support.h"
#include "unity/executor/pipeline_training.h"

namespace unity::executor::testing {

// Every rank of the plan's grid (stages x copies x a replica's tp x cp devices) on a thread;
// rank 0's result.
inline TrainingResult train_pipeline_on_threads(const Plan& plan, const TrainingOptions& o) {
  const PipelinePlan& p = *plan.pipeline;
  return run_on_threads(p.pipeline_stages * p.data_parallel * p.grid().replica(),
                        [&](DeviceBackend& backend, Communicator& comm) {
                          return train_pipeline(plan, o, backend, comm);
                        });
}

// The plan's model, unpipelined, on one rank.
inline TrainingResult train_one_rank(const Plan& plan, const TrainingOptions& o) {
  const Graph model = pipeline_model(plan);
  const Program p = lower_plan(model, single_device_views(model), 1);
  auto backend = make_cpu_backend(1);
  auto comm = make_local_communicator();
  return train(p, o, *backend, *comm);
}

}  // namespace unity::executor::testing
