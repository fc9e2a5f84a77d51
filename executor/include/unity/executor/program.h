#pragma once
// Lowering: a plan (PCG + one machine view per placed node) becomes the program every rank runs. It
// says which piece of which tensor each rank holds, which tasks (kernels) it runs, where each
// task's inputs come from, and which collectives it joins with which ranks. Every rank lowers the
// same plan to the same program and executes its own part, so no schedule is ever exchanged.
//
// Data moves by one general rule: a task requests a region of a tensor (and which replica), and the
// request is served by the pieces that overlap it, copied locally or sent point-to-point.
// Partition, Combine and Replicate are nothing but such requests; Reduce and AllReduce add a sum.
// Common patterns get collectives instead (AllReduce: one all-reduce; Reduce then Partition: one
// reduce-scatter), and replicated weights synchronise their gradients with all-reduces among the
// ranks holding copies.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "unity/core/errors.h"
#include "unity/core/mapping/machine_view.h"
#include "unity/core/pcg/graph.h"
#include "unity/executor/region.h"
#include "unity/executor/replica_layout.h"

namespace unity::executor {

// A plan the executor cannot run: the message names the node and the reason (exit code 1).
struct LoweringError : InputError {
  using InputError::InputError;
};

enum class TensorOrigin {
  Placed,    // produced by a placed operator's tasks: piece i lives on the rank of task i
  Input,     // an Input's data (after parallel ops): each rank materialises the regions it reads
  Weight,    // a Weight (after parallel ops): each rank keeps the regions its tasks read
  Constant,  // a Constant's values (after parallel ops): read like an Input, never trained
};

struct TensorInfo {
  TensorRef ref;
  ParallelTensorShape shape;
  ReplicaLayout layout;
  TensorOrigin origin = TensorOrigin::Placed;
  NodeId root = -1;             // the Input or Weight node the data comes from (not Placed)
  bool requires_grad = false;   // depends on a weight
  std::vector<int> piece_rank;  // Placed: the rank holding each piece
};

// One input region a task reads.
struct Request {
  int slot = 0;  // which input of the node (Reduce and AllReduce read one input k times)
  TensorRef tensor;
  Region region;    // global coordinates
  int replica = 0;  // which replica; any copy with the same partial_key will do
};

// A part of a request served by one piece.
struct Fragment {
  int piece =
      -1;  // source piece (linear index); -1: data of an Input/Weight held on the task's rank
  int rank = -1;  // where that piece lives
  Region region;  // inside both the request and the piece
};

struct Task {
  int index = 0;  // = the output piece it produces
  int rank = 0;
  std::vector<Request> inputs;
  std::vector<std::vector<Fragment>> fragments;  // per request
};

enum class Collective {
  None,           // point-to-point fragments
  AllReduce,      // AllReduce node: one all-reduce per group of copies
  ReduceScatter,  // Reduce followed by Partition of the same degree: one reduce-scatter per group
};

struct Step {
  NodeId node = -1;
  std::vector<Task> tasks;
  Collective collective = Collective::None;
  // AllReduce: the ranks of each group's pieces in replica order. ReduceScatter: the ranks of the
  // Partition's output blocks in block order (which is the order of the communicator).
  std::vector<std::vector<int>> groups;
  NodeId fused_partition = -1;  // ReduceScatter: the Partition node this step also executes
  bool fused_away = false;      // a Partition executed by the preceding ReduceScatter step
  // BatchNorm: tasks that normalise with shared batch statistics (same channels, other samples).
  std::vector<std::vector<int>> statistics_groups;
};

// Weight data one rank keeps: a region of a Weight node, with its gradient and optimizer state.
struct WeightShard {
  NodeId root = -1;
  int rank = 0;
  Region region;
};

// Gradients of a weight region that several ranks hold are summed among them (Replicate's
// backward). `cells` cut the weight so that each cell is held whole by exactly `ranks`.
struct GradientSync {
  NodeId root = -1;
  std::vector<int> ranks;
  std::vector<Region> cells;
};

struct Program {
  Graph graph;  // the plan's PCG
  int ranks = 1;
  std::map<TensorRef, TensorInfo> tensors;
  std::vector<Step> steps;  // one per placed node, topological order
  std::vector<WeightShard> shards;
  std::vector<GradientSync> gradient_syncs;
  std::vector<TensorRef>
      losses;  // sinks derived from a loss: the objective is the sum of their means
  std::vector<TensorRef> outputs;  // other sinks

  const TensorInfo& tensor(TensorRef t) const { return tensors.at(t); }
  const Step* step_of(NodeId node) const;
};

struct LoweringOptions {
  bool require_loss = true;  // training needs a loss; evaluating a model does not
  // Every output is part of the objective (its mean), loss or not: profiling one operator alone.
  bool train_all_outputs = false;
  // Inputs whose gradient is wanted: a pipeline chunk's incoming activation, whose gradient goes
  // back to the stage before.
  std::set<NodeId> inputs_with_gradients;
};

// Device d of the plan runs on rank d % ranks (ranks must not exceed the devices the views use).
// Throws LoweringError naming the node and the reason when the plan cannot be executed.
Program lower_plan(const Graph& pcg, const std::map<NodeId, MachineView>& views, int ranks,
                   const LoweringOptions& options = {});

// Views that put every placed node of a graph with no parallel degrees on device 0.
std::map<NodeId, MachineView> single_device_views(const Graph& graph);

// Human-readable account of one rank's part of a program (`unity-worker --explain`, tests).
std::string describe_rank(const Program& program, int rank);

}  // namespace unity::executor
