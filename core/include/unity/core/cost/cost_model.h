#pragma once
// The analytic cost model (paper 5, "cost estimation"): an operator task's forward and backward
// time from its FLOPs and bytes against the device's peaks (roofline with efficiency factors, plus
// a launch latency), collectives costed on the topology using the slowest link inside the device
// group, and measured profiles overriding the analytic times where a project has them.
#include <array>
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

// Bytes of one weight's gradient as training frameworks keep and reduce it: bf16 weights
// accumulate and all-reduce their gradients in fp32 (Megatron-LM turns
// accumulate_allreduce_grads_in_fp32 on for --bf16; Llama 3's FSDP keeps fp32 gradients), fp16
// and fp32 weights in their own dtype.
double gradient_bytes(DataType weight_dtype);

// One matrix product inside a task: `count` independent m x n outputs (a batched product's batch)
// and its FLOPs, which tile and wave quantization apply to.
struct GemmShape {
  double m = 0, n = 0, count = 1;  // count: m x n products whose tiles share the SMs at once
  double flops = 0;
  bool fp8 = false;  // runs at the fp8 peak where the device has one
  // Products in all, where fewer run at once than there are (a grouped GEMM's four streams); a
  // CPU runs each at the rate measured for its size. 0: count.
  double products = 0;
};

// Work of one task of an operator (one piece of its output), forward pass.
struct TaskWork {
  double flops = 0;
  double bytes = 0;           // read + written
  double backward_ratio = 1;  // backward work / forward work
  // Bytes of memory-bound kernels that run between the compute-bound ones of a fused operator
  // (attention's scores through the softmax), so they add to its time instead of hiding under it.
  double serial_bytes = 0;
  // FLOPs a fused causal attention kernel skips (the score blocks its mask hides), which FLOP
  // counts such as Megatron-LM's still count: `flops` is what runs.
  double skipped_flops = 0;
  // The matrix products among `flops` (a projection's, a convolution's as an implicit GEMM).
  std::array<GemmShape, 8> gemms{};
  int gemm_count = 0;
  // FP8 training (set_fp8_gemms): of `flops`, the GEMMs that take fp8 inputs, and the bytes the
  // casts to fp8 move around them (Transformer Engine's fused cast-and-transpose reads each bf16
  // GEMM input once and writes it in fp8 and transposed in fp8, for the backward's weight
  // gradient: 4 bytes an element, its own kernel beside the GEMM). Used where the device has an
  // fp8 peak; elsewhere the operator runs as in bf16.
  double fp8_flops = 0;
  double fp8_cast_bytes = 0;
  // Bytes a convolution lowered through memory moves beside its GEMM
  // (DeviceSpec::lowers_convolutions_through_memory): its columns matrix (im2col: each output
  // position's input window laid out as a row, channels x window x positions elements; none for a
  // 1x1 convolution that reads its input as it is) written and read again by the GEMM, and the
  // output read and written again to add the bias.
  double conv_lowering_bytes = 0;
  // A depthwise convolution's multiply-adds, which run at DeviceSpec::depthwise_mac_seconds each
  // where the device states it (a CPU's direct kernel) instead of as FLOPs at its peak.
  double depthwise_macs = 0;
  // Kernels the task launches in its forward pass, each DeviceSpec::launch_latency (the backward
  // pass's scale with backward_ratio like the rest of its work): one for most operators, one a
  // product where a grouped GEMM runs a product an expert.
  double launches = 1;
  // Values of an exponential-like function the task evaluates (exp, log, tanh), which cost
  // DeviceSpec::transcendental_seconds each beside the task's memory traffic, and of erf
  // (GELU's), which cost DeviceSpec::erf_time() each.
  double transcendentals = 0;
  double erfs = 0;
  // Those the backward pass evaluates, where its derivative does not simply repeat the forward's
  // (GELU's derivative needs the normal CDF and density: an erf and an exp; a softmax's needs only
  // its output: none). backward_transcendentals negative: the forward's, both kinds, scaled by
  // backward_ratio like the rest of its work (backward_erfs is then not read).
  double backward_transcendentals = -1;
  double backward_erfs = 0;
  // Of `flops`, an attention's two batched products (scores and context) as they run, and of the
  // backward's work (flops x backward_ratio) theirs: what a context-parallel ring's sends hide
  // behind.
  double product_flops = 0, product_backward_flops = 0;
  bool fused_products = false;  // those products run in one fused attention kernel
  // Elements an Experts task makes inside itself that its backward pass reads, as Megatron-Core's
  // grouped MLP keeps them, at an even share of the routed tokens: the routed copies of the
  // tokens (the up projections' input), the up projections' output (the activation's input) and
  // the activation's output (the down projection's input).
  double expert_routed_input = 0, expert_up_output = 0, expert_act_output = 0;
  // An attention's work: `around` FLOPs of projections and the like, and `all` FLOPs of its two
  // batched products (scores and context), of which `run` run. Fused (one FlashAttention kernel,
  // Dao et al. 2022), a causal mask skips the rest and the backward recomputes the scores: five
  // products against the forward's two. Unfused, every product runs and the backward is twice
  // the forward.
  void set_attention(double around, double all, double run, bool fused) {
    if (!fused) run = all;
    skipped_flops = all - run;
    flops = around + run;
    backward_ratio = fused ? (2.0 * around + 2.5 * run) / flops : 2.0;
    product_flops = run;
    product_backward_flops = (fused ? 2.5 : 2.0) * run;
    fused_products = fused;
  }
  void add_gemm(double m, double n, double count, double flops, double products = 0) {
    if (gemm_count < static_cast<int>(gemms.size()))
      gemms[gemm_count++] = {m, n, count, flops, false, products};
  }
};
// Bytes a cross-entropy over half-precision logits moves per logit, forward and backward, as the
// frameworks run it in fp32 (task_work; docs/cost-model.md).
inline constexpr double kCrossEntropyForwardBytes = 38;
inline constexpr double kCrossEntropyBackwardBytes = 14;
// `fused_kernels`: the device runs a fused attention operator as one kernel
// (DeviceSpec::fused_attention); else as the unfused kernels.
TaskWork task_work(const Graph& graph, NodeId node, bool fused_kernels = true);

// Whether `n` runs as one fused attention kernel on `device`: a rule fused it and the device has
// the kernel.
bool runs_fused_attention(const Node& n, const DeviceSpec& device);

// Whether `n`'s GEMMs run in fp8 on `device`: the model trains in fp8 (set_fp8_gemms) and the
// device has an fp8 peak; elsewhere they run as in bf16.
bool runs_fp8_gemms(const Node& n, const DeviceSpec& device);

// Of a device's large-GEMM throughput, what a product of `count` m x n outputs reaches once its
// output tiles run in waves over `sms` streaming multiprocessors, each wave as long as a full one:
// useful outputs / (waves x sms x tile) (NVIDIA, "Matrix Multiplication Background User's Guide",
// tile and wave quantization), for the tile of 256 x 128, 128 x 256 or 128 x 128 (the large tiles
// cuBLAS and CUTLASS use on Ampere and Hopper) that wastes least, as the library's heuristic picks.
// 1 when sms is 0.
double gemm_wave_efficiency(double m, double n, double count, int sms);

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

// The FLOP/s one product of `flops` reaches on `device`: interpolated on log FLOPs between its
// measured gemm_rates (the end points' beyond them); without any, peak fp32 x compute_efficiency.
double gemm_rate(const DeviceSpec& device, double flops);

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
  // Backward work / forward work of a task: the task's own ratio, less the products of operands
  // that need no gradient where the device skips them (DeviceSpec::skips_data_gradients).
  static double backward_ratio(const Graph& graph, NodeId node, const TaskWork& w,
                               const DeviceSpec& device);
  // Time to apply the optimizer to `bytes` of weights on one device: its traffic at the memory
  // bandwidth, or where the device has measured updates (DeviceSpec::update_rates, of fp32
  // parameters: bytes / 4) the measured rate for that many.
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
