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

// A buffer on this rank covering a region of a tensor: a piece, a request, a weight shard.
struct Slot {
  void* value = nullptr;
  float* grad = nullptr;  // null when the tensor needs no gradient
  Region region;
  std::vector<i64> shape;  // local extents of the region
  int elem_size = 4;

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

// Throws LoweringError for an operator without a kernel.
std::unique_ptr<OpRunner> make_op_runner(const Graph& g, const Node& n);

// Runner factories, one per family (ops/*.cpp).
std::unique_ptr<OpRunner> make_elementwise_runner(const Graph& g, const Node& n);
// A point-wise operator from its core definition's function (throws LoweringError for others).
std::unique_ptr<OpRunner> make_pointwise_runner(const Graph& g, const Node& n);
// An operator along one axis from its core definition (axis_ops.cpp).
std::unique_ptr<OpRunner> make_axis_runner(const Graph& g, const Node& n);
std::unique_ptr<OpRunner> make_dense_runner(const Graph& g, const Node& n);
std::unique_ptr<OpRunner> make_conv_runner(const Graph& g, const Node& n);
std::unique_ptr<OpRunner> make_norm_runner(const Graph& g, const Node& n);
std::unique_ptr<OpRunner> make_layout_runner(const Graph& g, const Node& n);
std::unique_ptr<OpRunner> make_loss_runner(const Graph& g, const Node& n);
std::unique_ptr<OpRunner> make_embedding_runner(const Graph& g, const Node& n);
std::unique_ptr<OpRunner> make_attention_runner(const Graph& g, const Node& n);
std::unique_ptr<OpRunner> make_parallel_runner(const Graph& g, const Node& n);
// Resize from the core's interpolation (resize_ops.cpp).
std::unique_ptr<OpRunner> make_resize_runner(const Graph& g, const Node& n);
// TopK, GatherElements, ScatterElements, OneHot, ArgMax, ArgMin (index_ops.cpp).
// Experts on the host (experts_ops.cpp).
std::unique_ptr<OpRunner> make_experts_runner(const Graph& g, const Node& n);
// LatentAttention from the core's kernel (latent_attention_ops.cpp).
std::unique_ptr<OpRunner> make_latent_attention_runner(const Graph& g, const Node& n);
std::unique_ptr<OpRunner> make_index_runner(const Graph& g, const Node& n);
// Reduction from the core's arithmetic (reduction_ops.cpp).
std::unique_ptr<OpRunner> make_reduction_runner(const Graph& g, const Node& n);
// Pad, GatherND, ScatterND (pad_nd_ops.cpp).
std::unique_ptr<OpRunner> make_pad_nd_runner(const Graph& g, const Node& n);
std::unique_ptr<OpRunner> make_random_runner(const Graph& g, const Node& n);
// Compare, Logical, Where, Cast (mask_ops.cpp).
std::unique_ptr<OpRunner> make_mask_runner(const Graph& g, const Node& n);
// Arithmetic: max, min, sum, mean, prelu, mod, pow of broadcast operands (arithmetic_ops.cpp).
std::unique_ptr<OpRunner> make_arithmetic_runner(const Graph& g, const Node& n);

}  // namespace unity::executor::detail
