#pragma once
// Training (and evaluating) a lowered program on one rank of a run. Every rank of the run calls
// train() with the same program and options; the loss and the timings are agreed on by all ranks
// and returned everywhere, the final weights (collect_weights) on rank 0.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "unity/core/pipeline/pipeline_cost.h"
#include "unity/core/pipeline/pipeline_schedule.h"
#include "unity/executor/communicator.h"
#include "unity/executor/device_backend.h"
#include "unity/executor/program.h"

namespace unity::executor {

struct HostTensor {
  std::vector<std::int64_t> shape;
  bool integer = false;
  std::vector<float> values;           // floating tensors
  std::vector<std::int64_t> integers;  // integer tensors
};

// Where each rank is, for the watchdog of unity-worker: called by the main thread at every step.
class ProgressMonitor {
 public:
  virtual ~ProgressMonitor() = default;
  enum class Phase { Setup, Forward, Backward, GradientSync, Update, Report };
  virtual void at(int iteration, Phase phase, NodeId node) = 0;
};

struct IterationReport {
  int index = 0;  // 0-based, warm-up iterations first
  bool warmup = false;
  double loss = 0;
  double milliseconds = 0;  // the slowest rank's time for this iteration
};

struct TrainingOptions {
  int iterations = 10;
  int warmup = 0;
  std::uint64_t seed = 1;
  std::string optimizer = "sgd";  // sgd, sgd-momentum, adam
  double learning_rate = 0;       // 0: sgd 0.01, sgd-momentum 0.01, adam 0.001
  double momentum = 0.9;
  bool collect_weights = false;
  std::function<void(const IterationReport&)> on_iteration;  // every rank, after each iteration
  ProgressMonitor* monitor = nullptr;
  // Time every step (forward and backward of each placed operator), the gradient all-reduces and
  // the update; the backend synchronises after each, so the iteration itself gets a little slower.
  bool profile = false;
  // Called at the start of every iteration with its index (fault injection of unity-worker).
  std::function<void(int iteration, ProgressMonitor::Phase phase)> before_phase;
};

// Measured time of one placed operator (or a phase: node -1): the median over the measured
// iterations, the slowest rank's.
struct OperatorProfile {
  // The plan's node (a pipelined run: the model's node of that name, -1 for an operator its
  // segment plans added, a parallel operator or a substitution's).
  NodeId node = -1;
  std::string name;  // the node's name, or "gradient all-reduce", "optimizer update", "other"
  std::string op;    // its type; empty for the run's own entries
  double forward_ms = 0;
  double backward_ms = 0;
};

// What a pipelined run measured (train_pipeline): per stage, the compute and the waiting, the
// timeline of one iteration, and each rank's memory by kind.
struct StageMeasurement {
  int stage = 0;
  double forward_ms = 0;   // per iteration: every forward pass of its chunks (recomputation not)
  double backward_ms = 0;  // per iteration: every backward pass (with recomputation)
  double idle_ms = 0;      // per iteration: waiting for activations or gradients (the bubble)
};

struct PipelineMeasurement {
  PipelineTimeline timeline;  // the last measured iteration (measured = true)
  std::vector<StageMeasurement> stages;
  double bubble_fraction = 0;             // median over the measured iterations
  std::vector<double> peak_memory_bytes;  // per rank: the most it held at once
  std::vector<MemoryBreakdown> memory;    // per pipeline rank (its first copy), at its peak
  std::string plan_dtype;                 // what the plan computes in
  std::string compute_dtype;              // what ran (the CPU runs fp16/bf16 plans in float32)
  std::string recompute;                  // what ran: none, selective or full
  int zero_stage = 0;
  // Bytes the busiest rank sent an iteration to spread its experts over data-parallel copies
  // (expert parallelism beyond a stage replica; 0 where the experts stay in the replica).
  double expert_exchange_bytes = 0;
};

struct TrainingResult {
  std::vector<double> losses;  // the measured iterations
  std::vector<double> warmup_losses;
  std::vector<double> iteration_ms;           // the measured iterations, slowest rank
  std::map<std::string, HostTensor> weights;  // rank 0 with collect_weights, by Weight name
  double setup_ms = 0;
  std::size_t device_bytes = 0;                 // memory this rank allocated
  std::vector<OperatorProfile> profile;         // with TrainingOptions::profile
  std::optional<PipelineMeasurement> pipeline;  // a pipelined plan's run
};

TrainingResult train(const Program& program, const TrainingOptions& options, DeviceBackend& backend,
                     Communicator& comm);

// Forward pass only (Dropout off), with given values for every Input and Weight (by node id;
// missing sources get synthetic data). Returns the value of every sink on rank 0.
std::map<TensorRef, HostTensor> evaluate(const Program& program,
                                         const std::map<NodeId, HostTensor>& sources,
                                         DeviceBackend& backend, Communicator& comm);

struct Gradients {
  double loss = 0;
  std::map<std::string, HostTensor> weights;  // rank 0: each Weight's gradient, by name
};
// One forward and backward pass in training mode (iteration 0, so Dropout masks repeat) with the
// given sources (missing ones synthetic): the loss and every weight's gradient. For gradient
// checks.
Gradients compute_gradients(const Program& program, const std::map<NodeId, HostTensor>& sources,
                            DeviceBackend& backend, Communicator& comm);

// The optimizer's default learning rate.
double default_learning_rate(const std::string& optimizer);

}  // namespace unity::executor
