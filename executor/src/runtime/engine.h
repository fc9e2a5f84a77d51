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

struct SourceValues {
  const std::map<NodeId, HostTensor>* given = nullptr;  // evaluate(): real values by node
  std::uint64_t seed = 1;
};

struct OptimizerConfig {
  std::string kind = "sgd";
  float learning_rate = 0.01f;
  float momentum = 0.9f;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
};

class Engine {
 public:
  Engine(const Program& program, DeviceBackend& backend, Communicator& comm,
         const SourceValues& sources, ProgressMonitor* monitor, bool training);

  void forward(int iteration);
  void backward(int iteration);
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
  Slot* new_slot(const Region& region, int elem_size, bool grad);
  Slot* piece(TensorRef t, int index);  // a piece this rank holds (creates it on first use)
  Slot* source_slot(const TensorInfo& t, const Region& region);
  void setup_step(const Step& step);
  void setup_collective(StepState& s);
  void setup_transfers(StepState& s);
  void run_exchange(const std::vector<Send>& sends, const std::vector<Receive>& receives,
                    bool add_into, int tag, bool gradients);
  void forward_collective(StepState& s);
  void backward_collective(StepState& s);
  void seed_loss_gradients();
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
  std::vector<double> forward_s_, backward_s_;
  double sync_s_ = 0, update_s_ = 0;
  std::vector<std::vector<double>> profile_record_;  // per iteration, profile entries
  void add_time(double& into, std::chrono::steady_clock::time_point since);
  std::vector<void*> sync_staging_;
};

}  // namespace unity::executor::detail
