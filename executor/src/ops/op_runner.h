#pragma once
// Operator kernels at the level of a step: a runner receives the buffers of every task of its node
// that runs on this rank (inputs as the task requested them, outputs as the pieces it produces) and
// calls the backend's kernels. Gradients of inputs are accumulated (+=), never overwritten.
#include <cstdint>
#include <memory>
#include <vector>

#include "../runtime/device_memory.h"
#include "unity/executor/communicator.h"
#include "unity/executor/device_backend.h"
#include "unity/executor/program.h"

namespace unity::executor::detail {

// Bytes an element of `type` takes in the executor's buffers: 4 for the floating types (float32
// on the host), 8 for every integer type and bool (held as int64).
inline int held_element_size(DataType type) { return is_floating(type) ? 4 : 8; }

// A buffer on this rank covering a region of a tensor: a piece, a request, a weight shard.
struct Slot {
  void* value = nullptr;
  float* grad = nullptr;  // null when the tensor needs no gradient
  Region region;
  std::vector<i64> shape;  // local extents of the region
  int elem_size = 4;
  DataType dtype = DataType::Float32;  // integers (8-byte elements) wrap into its range

  float* f() const { return static_cast<float*>(value); }
  const std::int64_t* ints() const { return static_cast<const std::int64_t*>(value); }
  i64 elements() const { return region.num_elements(); }
};

struct TaskBuffers {
  const Task* task = nullptr;
  std::vector<Slot*> in;       // one per request
  std::vector<Slot*> out;      // one per output of the node
  std::vector<void*> scratch;  // what the runner keeps between forward and backward
};

// Where a pipelined plan spreads its experts over data-parallel copies as well (expert
// parallelism beyond a stage replica, Megatron-Core's EP with ETP 1): each Experts task runs its
// share of the experts on the tokens of every copy of its group, gathered from them and summed
// back (the all-gather token dispatcher). The copies still keep every expert's weights, so that
// the data-parallel gradient sum, of zeros where a copy holds none, leaves them equal.
struct ExpertCopies {
  Communicator* world = nullptr;
  int expert_parallel = 1;      // the plan's EP degree
  std::vector<int> copy_ranks;  // world rank of this device's place in each copy, copy order
  int copy = 0;                 // this rank's
  double bytes_sent = 0;        // by the exchanges so far (the run reads and resets it)
};

struct StepContext {
  DeviceBackend& backend;
  Communicator& comm;
  DeviceMemory& memory;
  const Program& program;
  const Step& step;
  const Node& node;
  int iteration = 0;
  std::uint64_t seed = 0;
  bool training = true;  // false: Dropout is the identity (evaluation)
  // A pipeline micro-batch: its rows start at batch_offset of a batch of global_batch (0: the
  // program's batch is the whole batch).
  std::int64_t batch_offset = 0;
  std::int64_t global_batch = 0;
  ExpertCopies* expert_copies = nullptr;  // a pipelined rank's (null: experts stay in the replica)
};

class OpRunner {
 public:
  virtual ~OpRunner() = default;
  // True when each output piece is the task's single input buffer (moves and reshapes): nothing to
  // compute, the gradient flows through the shared buffer.
  virtual bool output_is_input() const { return false; }
  virtual void prepare(StepContext&, std::vector<TaskBuffers>&) {}
  virtual void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) = 0;
  virtual void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) = 0;
};

// The runner of the node's operator (kernel_registry.h); throws LoweringError for an operator
// without a kernel.
std::unique_ptr<OpRunner> make_op_runner(const Graph& g, const Node& n);

}  // namespace unity::executor::detail
