#pragma once
// Where a pipelined plan's devices sit among the machine's, which numbers them node by node and pod
// by pod. Tensor parallelism is innermost: a stage replica's devices are adjacent, on one node's
// fast links. Above it the order is a choice with a cost. Megatron-LM and torchtitan put the
// data-parallel copies next and the pipeline outermost ("tp-dp-pp", inner to outer): a stage's
// copies are neighbours and its sends travel far. Llama 3 put the pipeline next and the copies
// outermost ("tp-pp-dp"): a replica's sends stay inside its pod and the data-parallel collectives,
// which overlap with compute, cross the pods.
#include <string_view>
#include <vector>

namespace unity {

enum class DeviceOrder { PipelineOutermost, DataParallelOutermost };
std::string_view to_string(DeviceOrder order);                // "tp-dp-pp", "tp-pp-dp"
DeviceOrder device_order_from_string(std::string_view name);  // throws InputError

struct GridPosition {
  int stage = 0;  // pipeline rank
  int copy = 0;   // data-parallel copy
  int index = 0;  // device of the stage replica: tensor-parallel rank + tp x context-parallel rank
};

// Context parallelism (cp > 1) makes a stage replica tp x cp devices, the tensor-parallel ranks
// innermost and the context-parallel ones next ("tp-cp-dp-pp" or "tp-cp-pp-dp", as Megatron-Core
// and Llama 3 order them): each sequence shard's tensor-parallel group on one node, its K/V
// exchange between neighbouring groups.
struct PipelineGrid {
  int tp = 1, pp = 1, dp = 1;
  DeviceOrder order = DeviceOrder::PipelineOutermost;
  int cp = 1;

  int replica() const { return tp * cp; }

  int device(int stage, int copy, int index) const;
  GridPosition position(int device) const;

  // The i-th device of pipeline stage `stage` in Megatron-Core's rank order inside a stage:
  // tensor-parallel ranks, then context-parallel ones, then copies.
  int nth_device(int stage, int i) const;
  // The devices of a stage holding the same weights (tensor-parallel rank 0 of every sequence
  // shard of every copy), which synchronise them.
  std::vector<int> data_parallel_group(int stage) const;
  // The devices of a stage that exchange tokens in one all-to-all of expert parallelism `ep` (the
  // first expert group: with etp 1 its first ep devices, tp devices of ep / tp consecutive
  // copies; with each expert split over etp devices, Megatron-Core's expert ranks, the slices
  // innermost: one device every etp), and those holding the same experts, or the same slices of
  // them (every `held` devices: ep x etp).
  std::vector<int> expert_group(int stage, int ep, int etp = 1) const;
  std::vector<int> expert_data_group(int stage, int held) const;
  // The context-parallel ranks of a stage's first copy, one ring per tensor-parallel rank.
  std::vector<std::vector<int>> context_groups(int stage) const;
};

}  // namespace unity
