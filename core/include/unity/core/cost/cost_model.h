#pragma once
// The analytic cost model (paper 5, "cost estimation"): an operator task's forward and backward
// time from its FLOPs and bytes against the device's peaks (roofline with efficiency factors, plus
// a launch latency), collectives costed on the topology using the slowest link inside the device
// group, and measured profiles overriding the analytic times where a project has them.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/graph.h"

namespace unity {

enum class Optimizer { SGD, SGDMomentum, Adam };
std::string_view to_string(Optimizer o);
Optimizer optimizer_from_string(std::string_view name);  // throws InputError
int optimizer_state_copies(Optimizer o);                 // extra weight-sized tensors kept

// Work of one task of an operator (one piece of its output), forward pass.
struct TaskWork {
  double flops = 0;
  double bytes = 0;           // read + written
  double backward_ratio = 1;  // backward work / forward work
  // Bytes of memory-bound kernels that run between the compute-bound ones of a fused operator
  // (attention's scores through the softmax), so they add to its time instead of hiding under it.
  double serial_bytes = 0;
};
TaskWork task_work(const Graph& graph, NodeId node);

struct OpTimes {
  double forward = 0;   // seconds, one task
  double backward = 0;  // seconds, one task (without the weight update)
};

// Measured operator times that override the analytic model (fed by the project file later).
class ProfileSource {
 public:
  virtual ~ProfileSource() = default;
  virtual std::optional<OpTimes> lookup(const Graph& graph, NodeId node,
                                        const DeviceSpec& device) const = 0;
};

struct Transfer {
  int src = 0;
  int dst = 0;
  double bytes = 0;
};

class CostModel {
 public:
  CostModel(const MachineSpec& machine, Optimizer optimizer = Optimizer::SGD,
            std::shared_ptr<const ProfileSource> profiles = nullptr);

  const MachineSpec& machine() const { return machine_; }
  Optimizer optimizer() const { return optimizer_; }
  // Off: operator costs leave out the weight update and the gradient all-reduce of replicated
  // weights, which happen once an iteration, not once a micro-batch (the pipeline planner costs a
  // segment per micro-batch and adds both per iteration itself).
  void set_counts_weight_updates(bool on) { counts_weight_updates_ = on; }
  bool counts_weight_updates() const { return counts_weight_updates_; }

  OpTimes task_times(const Graph& graph, NodeId node, const DeviceSpec& device) const;
  // Time to apply the optimizer to `bytes` of weights on one device (memory bound).
  double update_time(double weight_bytes, const DeviceSpec& device) const;
  // Point-to-point transfers that run at the same time: each destination receives its bytes over
  // the links from their sources one after another; the slowest destination decides.
  double transfers_time(const std::vector<Transfer>& transfers) const;
  // All-reduce of `bytes` on every device of the group over the slowest link of the group: the
  // faster of a ring (2(k-1) steps of bytes/k) and a pipelined tree (2 log2 k latencies).
  double allreduce_time(const std::vector<int>& group, double bytes) const;
  // Bytes all devices of the group send in a ring all-reduce: 2(k-1)/k * bytes each.
  static double allreduce_bytes(int group_size, double bytes);

 private:
  MachineSpec machine_;
  Optimizer optimizer_;
  std::shared_ptr<const ProfileSource> profiles_;
  bool counts_weight_updates_ = true;
};

}  // namespace unity
