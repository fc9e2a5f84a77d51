#pragma once
// Run and record: training a plan for real (one CPU rank in this process, or `mpirun unity-worker`)
// for `unity run` and the explorer's run view, the run's row and metrics in a project, and its
// per-operator measurements as the project's operator profiles, which the next optimize with that
// project costs operators by (the calibration loop, docs/cost-model.md).
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "unity/core/plan/plan.h"
#include "unity/executor/training.h"
#include "unity/projects/project.h"
#include "unity/projects/records.h"

namespace unity::use_cases {

struct RunRequest {
  std::string backend = "cpu";
  int ranks = 1;
  int iterations = 10;
  int warmup = 0;
  std::uint64_t seed = 1;
  std::string optimizer;     // empty: the plan's
  double learning_rate = 0;  // 0: the optimizer's default
  int threads = 1;           // BLAS threads per rank
  double timeout_seconds = 60;
  bool collect_weights = false;
  bool profile = false;        // time every operator and collective
  bool always_mpirun = false;  // start even one CPU rank through mpirun
  std::string plan_file;       // the plan as a file already (else a temporary copy is written)
  std::string worker;          // unity-worker (empty: beside this program)
  std::string mpirun;          // empty: $UNITY_MPIRUN, else on PATH
  std::vector<std::string> mpirun_args;
  std::string inject_fault;  // testing: KIND@RANK:ITERATION
  std::function<void(const executor::IterationReport&)> on_iteration;
  // In-process runs: asked at every phase and operator; it throws to stop the run.
  executor::ProgressMonitor* monitor = nullptr;
  // The optimizer the run uses: the request's, else the plan's, else sgd.
  std::string optimizer_for(const Plan& plan) const;
};

struct RunResult {
  executor::TrainingResult training;
  std::string command;  // how it ran: "in this process ..." or the mpirun command line
};

// Throws InputError when `backend` is unknown, or not available on this computer (and why).
void require_backend(const std::string& backend);
// What a run must satisfy before anything starts: an available backend, 1 to the plan's devices
// ranks (a pipelined plan: one rank per device), at least one measured iteration. Throws
// InputError naming what is wrong.
void check_run_request(const Plan& plan, const RunRequest& request);

// check_run_request and an executable lowering (a bad plan fails naming the node) before anything
// starts, then trains. Throws InputError (RunError) for a
// run that cannot start or that failed.
RunResult run_plan(const Plan& plan, const RunRequest& request);

// The run against the one-rank reference (`unity run --check`): the plan's serial model trained on
// one CPU rank in this process with the run's seed and settings. The largest differences of the
// losses and of the weights (the run must have collected them), and the largest relative one.
struct ReferenceCheck {
  double losses = 0, weights = 0, relative = 0;
  std::vector<double> reference_losses;
};
ReferenceCheck check_against_one_rank(const Plan& plan, const RunRequest& request,
                                      const executor::TrainingResult& run);

// What `unity run --json` and the project's run row say of a finished run: model, mode, machine,
// ranks, iterations, the measured median and every iteration's time and loss, and a pipelined
// run's stages, bubble, memory and timeline.
nlohmann::json run_result_json(const Plan& plan, const RunRequest& request, const RunResult& run);

// A training run of a plan, recorded as it goes: the plan is stored (or the equal stored one is
// reused), the run row reads 'running' until finish(), metrics are committed per call. A run not
// finished when this object goes away is marked failed.
class RunRecording {
 public:
  RunRecording(projects::Project& project, const Plan& plan, const RunRequest& request);
  ~RunRecording();
  RunRecording(const RunRecording&) = delete;
  RunRecording& operator=(const RunRecording&) = delete;

  std::int64_t run_id() const { return run_id_; }
  std::int64_t plan_id() const { return plan_id_; }
  void add_iterations(const std::vector<projects::RunMetric>& metrics);
  // A profiled run's measured operator and collective times (run_profiles), kept as the
  // project's operator profiles, which the next plan made with the project is costed with.
  // Returns how many.
  std::size_t keep_profiles(const Plan& plan, const executor::TrainingResult& result);
  // status: completed, cancelled or failed; result: run_result_json and the caller's additions.
  void finish(projects::Status status, const nlohmann::json& result);

 private:
  projects::Project& project_;
  int ranks_ = 1;
  std::int64_t plan_id_ = 0;
  std::int64_t run_id_ = 0;
  bool finished_ = false;
};

// A profiled run's measurements as operator profiles (key: op_profile_key; device: the plan's
// device the operator ran on): every compute operator's forward and backward seconds per task,
// every parallel operator's (its collective's) seconds, and the gradient all-reduce. A task's time
// is the slowest rank's time for the operator divided by the tasks that rank ran.
std::vector<projects::OpProfile> run_profiles(const Plan& plan, int ranks,
                                              const executor::TrainingResult& result,
                                              const std::string& source);

// The key of the gradient all-reduce's measured time for a run on `ranks` ranks.
std::string gradient_allreduce_key(int ranks);

}  // namespace unity::use_cases
