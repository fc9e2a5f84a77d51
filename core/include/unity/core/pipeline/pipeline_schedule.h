#pragma once
// The order in which each pipeline rank runs its micro-batches (Megatron-LM's 1F1B schedule and its
// interleaved form, Narayanan et al. SC'21 section 2.2), and the timeline that order gives: one box
// per forward or backward pass of a model chunk and micro-batch. The executor runs exactly this
// order; the explorer draws the timeline, predicted from a plan or measured by a run, and exports
// it as a Chrome trace. Beside the passes, a predicted timeline holds each rank's communication
// (point-to-point sends, the data-parallel gradient synchronisation, the optimizer step), each part
// hidden behind compute or exposed, so that what the communication adds to the iteration shows.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "unity/core/pipeline/pipeline_planner.h"

namespace unity {

struct PipelineAction {
  bool backward = false;
  int chunk = 0;        // the rank's own chunk, 0..interleave-1 (model chunk chunk x stages + rank)
  int micro_batch = 0;  // 0..micro_batches-1
  bool operator==(const PipelineAction&) const = default;
};

// Pipeline rank `rank`'s passes in order: warm-up forwards, then one forward and one backward in
// turn, then the remaining backwards. With `interleave` v > 1 the micro-batches go through the
// rank's chunks in groups of `stages` (Megatron-LM's rule: stages divide the micro-batches).
// Throws InputError for a count the schedule cannot take.
std::vector<PipelineAction> pipeline_schedule(int rank, int stages, int micro_batches,
                                              int interleave = 1);

// The model chunk (0..stages x interleave - 1, in model order) that `rank` runs as its `chunk`.
inline int model_chunk(int rank, int chunk, int stages) { return chunk * stages + rank; }

struct TimelineBox {
  int rank = 0;   // pipeline rank (stage)
  int chunk = 0;  // model chunk
  int micro_batch = 0;
  bool backward = false;
  double start = 0, end = 0;  // seconds from the iteration's first forward
};

// One stretch of a pipeline rank's communication (or the optimizer step that ends the iteration).
// `exposed`: the rank waits for it (it adds to the iteration); else it runs behind compute.
struct CommBox {
  int rank = 0;               // pipeline rank (stage)
  std::string kind;           // kCommP2p, kCommGradientSync, kCommOptimizerStep
  double start = 0, end = 0;  // seconds from the iteration's first forward
  bool exposed = true;
  bool operator==(const CommBox&) const = default;
};
inline constexpr const char* kCommP2p = "p2p";
inline constexpr const char* kCommGradientSync = "gradient sync";
inline constexpr const char* kCommOptimizerStep = "optimizer step";
// A pass's expert all-to-alls: tokens to their experts' devices, and the experts' outputs back
// (in the backward pass their gradients, in reverse order).
inline constexpr const char* kCommDispatch = "dispatch";
inline constexpr const char* kCommCombine = "combine";
inline constexpr const char* kCommContextExchange = "K/V exchange";  // context parallelism

struct PipelineTimeline {
  int stages = 1;
  int micro_batches = 1;
  int interleave = 1;
  std::vector<std::string> stage_labels;  // per pipeline rank: "layers 0-11" (may be empty)
  std::vector<TimelineBox> boxes;  // compute only (a predicted pass's exposed sends: a CommBox)
  std::vector<CommBox> comm;       // per rank, in time order (a measured timeline may have none)
  double makespan = 0;             // seconds from the first forward to the last backward
  double bubble_fraction = 0;      // (makespan - busiest rank's work) / busiest rank's work
  bool measured = false;           // from a run (else predicted by the cost model)

  double busy(int rank) const;  // seconds rank `rank` computes
  // Seconds from the first forward to the end of the iteration: the makespan, or the end of the
  // last communication box (the optimizer step) after it.
  double end() const;
};

// Runs the schedule of every rank with each model chunk's forward and backward seconds per
// micro-batch (point-to-point time included): a pass starts when its rank is free and the pass it
// needs (the previous chunk's forward, the next chunk's backward) has ended.
PipelineTimeline simulate_pipeline(const std::vector<double>& chunk_forward,
                                   const std::vector<double>& chunk_backward, int stages,
                                   int micro_batches, int interleave = 1);

// Per pipeline rank, what its chunks hold: "embedding + layers 0-11", "layers 12-23 + head" (the
// layers of all its chunks merged where they touch).
std::vector<std::string> stage_labels(const PipelinePlan& plan);

// The timeline a pipelined plan predicts, as the plan's iteration time counts it:
// - each chunk's point-to-point time split between its forward and backward passes; the part the
//   plan leaves exposed follows the pass's compute box as an exposed "p2p" box (the rank waits),
//   the part it hides (Megatron-Core's overlapped interleaved sends) overlaps the compute;
// - a pass's expert all-to-alls (StagePlan::exchanges), half "dispatch" and half "combine": the
//   exposed ones follow its compute together (they interleave with the layers in truth, so the
//   compute box is the pass less them), the hidden ones overlap the compute; then the
//   context-parallel "K/V exchange" the pass waits for, then its exposed sends;
// - after each rank's last backward, the data-parallel gradient synchronisation: its hidden part
//   (behind the last backward passes) ending with them, its exposed part after the makespan;
// - the optimizer step once every rank's synchronisation is done (the gradient norm is reduced
//   over all ranks first), so that the timeline's end() is makespan + sync_time + update_time: the
//   plan's iteration_time wherever the simulated schedule gives the plan's pipeline_time.
PipelineTimeline predicted_timeline(const PipelinePlan& plan);

// Bubble fraction of a timeline's boxes, as pipeline_time() defines it.
double timeline_bubble_fraction(const std::vector<TimelineBox>& boxes, int stages);

nlohmann::json timeline_to_json(const PipelineTimeline& t);
PipelineTimeline timeline_from_json(const nlohmann::json& j);  // throws InputError

// The Chrome trace event format (chrome://tracing, Perfetto): one process, one thread per pipeline
// rank (tid: the rank) with a complete event ("ph": "X") per box and, where the timeline has
// communication, a thread "rank N communication" sorted under it (tid: stages + rank) with one
// complete event per CommBox (name: its kind; args: exposed), plus an instant event ("ph": "i")
// at the iteration's end; times in microseconds.
nlohmann::json chrome_trace(const PipelineTimeline& t, const std::string& title);

}  // namespace unity
