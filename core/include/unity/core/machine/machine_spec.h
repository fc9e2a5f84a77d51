#pragma once
// The machine a plan runs on (paper 3.2, 6.1): nodes of devices, devices grouped in islands that
// share fast links inside a node (Summit: two NVLink islands of 3 V100s per node, X-Bus between
// them), a network between nodes, and pods of nodes with full bisection bandwidth inside and an
// oversubscribed layer between them (Meta's Llama 3 cluster: pods of 3,072 GPUs, 1:7 above).
// Figures are published peaks; each preset says where they come from.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "unity/core/pcg/data_type.h"

namespace unity {

struct DeviceSpec {
  std::string name;          // "NVIDIA V100-SXM2-16GB"
  std::string kind = "gpu";  // "gpu" or "cpu"
  // Whether its collectives and sends run beside its compute: a GPU's on their own SMs and DMA
  // engines; a CPU rank moves the bytes with the core that computes (MPI's shared-memory and TCP
  // transports copy on it), so nothing it communicates hides behind its work.
  bool overlaps_communication() const { return kind != "cpu"; }
  double peak_flops_fp32 = 0;     // FLOP/s
  double peak_flops_fp16 = 0;     // FLOP/s (tensor cores where the device has them)
  double peak_flops_bf16 = 0;     // FLOP/s; 0: the fp16 figure (most tensor cores run both)
  double peak_flops_fp8 = 0;      // FLOP/s of fp8 tensor cores; 0: the device has none
  double memory_bandwidth = 0;    // bytes/s
  std::int64_t memory_bytes = 0;  // capacity
  // Fraction of peak FLOP/s that dense kernels (a large GEMM) reach. 0.6 on every device of the
  // paper's world; where a device's best-shape cuBLAS rate has been published (the maximum
  // achievable matmul FLOPS), the preset scales 0.6 by that rate relative to H100's
  // (docs/cost-model.md, "GEMMs by shape").
  double compute_efficiency = 0.6;
  // The same for fp8 GEMMs, of the fp8 peak; 0: compute_efficiency.
  double fp8_compute_efficiency = 0;
  double memory_efficiency = 0.8;  // fraction of peak bandwidth that memory-bound kernels reach
  double launch_latency = 5e-6;    // seconds per kernel launch
  // Streaming multiprocessors: a GEMM runs in waves of output tiles over them, and a last wave
  // that leaves SMs idle costs a whole wave (cost_model.h, gemm_wave_efficiency). 0: no such
  // quantization (CPUs, or a device whose count is not known).
  int sm_count = 0;
  // Runs attention as one fused kernel (FlashAttention-2 and cuDNN's fused attention, which
  // Megatron-Core and PyTorch use, need Ampere or newer). Without it a fused attention operator
  // runs the unfused kernels and costs as they do.
  bool fused_attention = false;
  // That kernel's rate on the attention's two batched products, as a fraction of peak, forward
  // and backward, measured (its other work, the projections, are GEMMs); 0: a GEMM's rate
  // (compute_efficiency). Backward kernels recompute the scores and run five products, and reach
  // less than the forward's.
  double fused_attention_forward_efficiency = 0;
  double fused_attention_backward_efficiency = 0;
  // Fuses chains of element-wise operators into kernels whose backward pass recomputes what the
  // chain made from the inputs it keeps (Megatron-Core's fused SwiGLU and bias-GeLU,
  // torch.compile's partitioner): an element-wise result read only by element-wise operators is not
  // kept.
  bool fused_elementwise = false;
  // The backward pass of a product (Linear, MatMul, BatchMatMul, Conv2D) computes the gradient of
  // each input only where that input needs one (needs_gradient): a first layer, which reads the
  // data, computes its weight gradient alone, half a hidden layer's backward. Unity's executor
  // does, and machines measured on it (cpu-local's probed and calibrated figures) say so. Off (the
  // presets', which the published comparisons were made with), every product's backward costs two
  // products.
  bool skips_data_gradients = false;
  // Runs a convolution as Unity's CPU executor does: the input's windows copied into a columns
  // matrix in memory (im2col), a GEMM over it, then the bias added in a pass of its own; each
  // pass pays for those bytes (TaskWork::conv_lowering_bytes) beside its FLOPs. Off (the
  // presets'): cuDNN's implicit GEMM forms the columns inside its tiles and adds the bias as it
  // writes the output.
  bool lowers_convolutions_through_memory = false;
  // Seconds one core of the device spends on one value of an exponential-like function (exp, log,
  // tanh: sigmoid and SiLU, softmax, the loss's softmax, attention's scores), beside the
  // element's memory traffic: a CPU evaluates them one element at a time in tens of cycles, so a
  // softmax over a small activation costs more than its bytes. Measured by cpu-local's probe and
  // `unity calibrate` (a sigmoid's); 0 (the presets'): free, as on GPUs, whose special function
  // units keep up with memory.
  double transcendental_seconds = 0;
  // The same for one value of erf (GELU's), which takes several times an exp's polynomial and
  // branches by magnitude; measured as a GELU's. 0: transcendental_seconds.
  double erf_seconds = 0;
  double erf_time() const { return erf_seconds > 0 ? erf_seconds : transcendental_seconds; }
  // Seconds per multiply-add of a depthwise convolution (a group a channel), which a CPU runs as
  // short rows of multiply-adds at a rate neither a GEMM's nor a stream's. Measured by cpu-local's
  // probe and `unity calibrate`; 0 (the presets'): its FLOPs at the device's rate.
  double depthwise_mac_seconds = 0;
  // Measured GEMM rates by size: (FLOPs of one product, FLOP/s reached), ascending. A product's
  // rate is interpolated on log FLOPs between them (the end points' beyond), in place of peak x
  // compute_efficiency: OpenBLAS reaches less on a transformer's 32 x 64 x 64 products than on
  // a 64 x 784 x 512 layer. Measured by cpu-local's probe and `unity calibrate`; empty (the
  // presets'): every product at peak x compute_efficiency.
  std::vector<std::pair<double, double>> gemm_rates;
  // Measured optimizer updates by size, per optimizer ("sgd", "sgd-momentum", "adam"): (fp32
  // parameters a call updates, seconds a parameter), ascending, interpolated on log parameters.
  // A CPU updates a small model's parameters from its caches several times faster than the
  // streaming bandwidth allows, and Adam's square root and division can bound it instead of its
  // bytes; beyond the largest size measured, the update is at least its traffic at
  // memory_bandwidth. Measured by cpu-local's probe and `unity calibrate`; empty (the presets'):
  // the update's traffic at memory_bandwidth x memory_efficiency.
  std::map<std::string, std::vector<std::pair<double, double>>> update_rates;

  // The fraction of the fp8 peak that fp8 GEMMs reach.
  double fp8_efficiency() const {
    return fp8_compute_efficiency > 0 ? fp8_compute_efficiency : compute_efficiency;
  }
  // The peak for arithmetic in `dtype` (fp16 and bf16 fall back to the figures they share).
  double peak_flops(DataType dtype) const;
};

struct LinkSpec {
  std::string name;      // "NVLink 2.0 (2 bricks)"
  double bandwidth = 0;  // bytes/s per direction
  double latency = 0;    // seconds
};

struct MachineSpec {
  std::string name;
  std::string description;
  std::string source;  // where the figures come from
  int num_nodes = 1;   // nodes in this (sub-)cluster
  int max_nodes = 1;   // nodes the preset's cluster has in all
  int devices_per_node = 1;
  int devices_per_island = 0;            // 0: the whole node is one island
  int nodes_per_pod = 0;                 // 0: every node is in one pod (a non-blocking fabric)
  std::vector<DeviceSpec> device_types;  // at least one
  std::vector<int> node_device_type;     // per node, an index into device_types; empty: all type 0
  LinkSpec intra_island;
  LinkSpec inter_island;
  LinkSpec inter_node;
  LinkSpec inter_pod;  // between nodes of different pods: what one device gets across the top layer

  int num_devices() const { return num_nodes * devices_per_node; }
  int node_of(int device) const { return device / devices_per_node; }
  int pod_of(int device) const { return nodes_per_pod > 0 ? node_of(device) / nodes_per_pod : 0; }
  // Pods of the whole cluster (max_nodes); inter_pod is used, and required, only when above 1.
  int pods() const { return nodes_per_pod > 0 ? max_nodes / nodes_per_pod : 1; }
  int island_of(int device) const;  // global island index
  int island_size() const;          // the whole node when devices_per_island is 0
  int islands_per_node() const;
  const DeviceSpec& device(int d) const;
  // The link two distinct devices communicate over (the slowest hop between them).
  const LinkSpec& link(int a, int b) const;
};

struct MachineSelection {
  int nodes = 0;    // --nodes N (0: not given)
  int devices = 0;  // --gpus N / --devices N (0: not given)
};

// Parses and validates a machine file; throws InputError naming the field ("inter_node.bandwidth
// must be positive").
MachineSpec machine_from_json(const nlohmann::json& j);
nlohmann::json machine_to_json(const MachineSpec& m);
// The checks machine_from_json makes, for machines built in code: positive FLOP/s, bandwidths and
// capacities, non-negative latencies, islands that divide a node, num_nodes <= max_nodes, ...
void validate_machine(const MachineSpec& m);

// Preset names, the paper's machine first: summit, dgx-a100, selene, dgx-h100, dgx-h200, dgx-b200,
// gb200-nvl72, pcie-4gpu, cpu-local.
std::vector<std::string> machine_preset_names();
// A preset or a machine .json file, cut down to the selection: --nodes N takes N whole nodes,
// --gpus N takes N devices (within one node when N fits, else whole nodes). Default: one node (a
// machine file's num_nodes, which is 1 unless the file says otherwise). Throws InputError when the
// selection asks for more than the machine has. cpu-local sizes its one node to --gpus N ranks
// (1..256) and divides this machine's RAM among them.
MachineSpec load_machine(const std::string& spec, const MachineSelection& selection = {});
// The selection step of load_machine on a machine already in memory.
MachineSpec select_machine(const MachineSpec& m, const MachineSelection& selection);

}  // namespace unity
