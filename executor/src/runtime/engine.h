#pragma once
// One rank's execution of a lowered program: the buffers it holds, the messages it sends and
// receives at each step, the kernels it runs, the gradient all-reduces and the optimizer update.
// Everything that can be decided once is decided in the constructor; an iteration only walks lists.
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>

#include "../ops/op_runner.h"
#include "synthetic_data.h"
#include "unity/executor/training.h"

namespace unity::executor::detail {

// Copies (or adds, with `add`) `region` from a buffer holding `from` to a buffer holding `to`.
void copy_region(DeviceBackend& be, const void* src, const Region& from, void* dst,
                 const Region& to, const Region& region, int elem_size, bool add);

struct SourceValues {
  const std::map<NodeId, HostTensor>* given = nullptr;  // evaluate(): real values by node
  std::uint64_t seed = 1;
  // A pipeline chunk's micro-batch: the Inputs listed here are rows [batch_offset, ...) of a
  // tensor of these global sizes (the whole model's), so that every micro-batch of every copy sees
  // the samples the one-rank reference sees; Dropout numbers its elements the same way.
  std::map<NodeId, std::vector<std::int64_t>> global_sizes;
  std::int64_t batch_offset = 0;
  std::int64_t global_batch = 0;  // 0: the program's own batch is the whole batch
};

struct OptimizerConfig {
  std::string kind = "sgd";
  float learning_rate = 0.01f;
  float momentum = 0.9f;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
};

// One optimizer step on n weights (state allocated from `memory` on first use): the engine's
// update, and a pipeline's update of its data-parallel shard (ZeRO).
void apply_optimizer(DeviceBackend& backend, DeviceMemory& memory, const OptimizerConfig& config,
                     int step, float* w, const float* g, float*& m, float*& v, std::int64_t n);

class Engine {
 public:
  // `weights_from`: another engine of the same program whose weights (values, gradients) this one
  // uses instead of its own: one engine per micro-batch in flight, one set of weights.
  Engine(const Program& program, DeviceBackend& backend, Communicator& comm,
         const SourceValues& sources, ProgressMonitor* monitor, bool training,
         const Engine* weights_from = nullptr);

  void forward(int iteration);
  // A whole backward pass: every gradient cleared, the losses seeded, the steps run backwards.
  void backward(int iteration);
  // The same in parts, for pipelines: clear the activations' gradients (weight gradients keep
  // accumulating), seed the losses (scaled), run the steps backwards.
  void begin_backward() { memory_.clear_gradients(); }
  void seed_loss_gradients(float scale);
  void run_backward(int iteration);
  void clear_weight_gradients() { memory_.clear_weight_gradients(); }
  // Pipelines: the micro-batch the listed Inputs hold (refills them).
  void set_batch_offset(std::int64_t offset);
  // The whole-tensor buffer of an Input this rank reads (a pipeline chunk's incoming activation).
  Slot* input_slot(NodeId input);
  // Piece `index` of a placed tensor this rank holds.
  Slot* output_piece(TensorRef t, int index = 0) { return pieces_.at({t, index}); }
  // The weight shards this rank keeps (value and gradient), in program order.
  std::vector<Slot*> weight_slots() const;
  // The optimizer's state this engine allocated, in bytes.
  std::size_t optimizer_bytes() const;
  void synchronize_gradients(int iteration);
  void update(const OptimizerConfig& config, int step);
  // Sum over the loss pieces this rank holds (one copy of each) of value / elements of the loss.
  double local_loss() const;
  // Rank 0: every weight, assembled from the shards of all ranks (collective).
  std::map<std::string, HostTensor> gather_weights(bool gradients = false);
  // Rank 0: a placed tensor assembled from its pieces (collective).
  HostTensor gather_tensor(TensorRef t);
  std::size_t device_bytes() const { return memory_.bytes(); }
  // Per-step timing (TrainingOptions::profile): each iteration's seconds per entry.
  void set_profiling(bool on) { profiling_ = on; }
  // A pipelined rank's data-parallel copies its Experts tasks may spread over.
  void set_expert_copies(ExpertCopies* copies) { expert_copies_ = copies; }
  void reset_profile();
  // Ends an iteration's timing: its entries join the record and start again from zero.
  void close_profile_iteration();
  // Per entry, the median over the recorded iterations: forward and backward seconds of each step
  // (0 for steps fused away), then the gradient all-reduces and the update.
  std::vector<double> profile_seconds() const;

 private:
  struct Send {
    int peer;
    const Slot* slot;  // the piece (forward) or the request (backward) the region is taken from
    Region region;
    void* staging;  // null: the region is the whole slot, sent from it directly
  };
  struct Receive {
    int peer;
    Slot* slot;  // the request (forward) or the piece (backward) the region goes into
    Region region;
    void* staging;  // null: the region is the whole slot, received into it directly
  };
  struct LocalCopy {
    const Slot* from;
    Slot* to;
    Region region;
  };

 public:
  struct StepState {
    const Step* step = nullptr;
    const Node* node = nullptr;
    std::unique_ptr<OpRunner> runner;
    std::vector<TaskBuffers> tasks;      // this rank's tasks
    std::vector<Send> sends;             // forward: pieces of mine that other ranks' tasks read
    std::vector<Receive> receives;       // forward: fragments my tasks read from other ranks
    std::vector<LocalCopy> copies;       // forward: fragments of my pieces my tasks read
    std::vector<Send> grad_sends;        // backward: gradients of fragments back to their owners
    std::vector<Receive> grad_receives;  // backward: gradients of my pieces from other ranks
    std::vector<LocalCopy> grad_adds;    // backward: gradients of local fragments into my pieces
    // Collectives (AllReduce, ReduceScatter fast paths).
    struct Group {
      std::vector<int> ranks;
      Slot* input = nullptr;   // my piece of the input
      Slot* output = nullptr;  // my output piece
      void* staging = nullptr;
      std::int64_t block = 0;  // ReduceScatter: elements per block
      bool packed = false;     // ReduceScatter: blocks are not contiguous in the input piece
      int dim = 0;
    };
    std::vector<Group> groups;
  };

  const std::vector<StepState>& steps() const { return steps_; }

 private:
  Slot* new_slot(const Region& region, DataType dtype, bool grad, bool weight = false);
  Slot* piece(TensorRef t, int index);  // a piece this rank holds (creates it on first use)
  Slot* source_slot(const TensorInfo& t, const Region& region);
  // A slot aliasing `region` of `whole` (contiguous in it): its value and gradient.
  Slot* view_of(const Slot& whole, const Region& region);
  void setup_step(const Step& step);
  void setup_collective(StepState& s);
  void setup_transfers(StepState& s);
  void run_exchange(const std::vector<Send>& sends, const std::vector<Receive>& receives,
                    bool add_into, int tag, bool gradients);
  void forward_collective(StepState& s);
  void backward_collective(StepState& s);
  StepContext context(StepState& s, int iteration);

  const Program& program_;
  DeviceBackend& backend_;
  Communicator& comm_;
  SourceValues sources_;
  ProgressMonitor* monitor_;
  bool training_;
  int rank_;
  DeviceMemory memory_;
  std::deque<Slot> slots_;
  std::map<std::pair<TensorRef, int>, Slot*> pieces_;
  std::map<std::tuple<NodeId, std::vector<i64>, std::vector<i64>>, Slot*> sources_by_region_;
  // Inputs this rank reads in several regions (a split convolution's overlapping windows): the
  // bounding box of those regions, held in one slot that each region is read from (a view or a
  // copy, gradients added back), so a pipeline stage hands the device one box.
  std::map<NodeId, Region> input_boxes_;
  struct Shard {
    const WeightShard* shard;
    Slot* slot;
    float* m = nullptr;  // optimizer state
    float* v = nullptr;
  };
  std::vector<Shard> shards_;
  std::vector<StepState> steps_;
  std::vector<const GradientSync*> syncs_;  // the ones this rank joins
  bool profiling_ = false;
  ExpertCopies* expert_copies_ = nullptr;
  std::vector<double> forward_s_, backward_s_;
  double sync_s_ = 0, update_s_ = 0;
  std::vector<std::vector<double>> profile_record_;  // per iteration, profile entries
  void add_time(double& into, std::chrono::steady_clock::time_point since);
  std::vector<void*> sync_staging_;
  const Engine* weights_from_ = nullptr;
  std::size_t optimizer_bytes_ = 0;
  void fill_source(const TensorInfo& t, Slot* s);
};

}  // namespace unity::executor::detail
