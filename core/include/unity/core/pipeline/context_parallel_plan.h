#pragma once
// Context parallelism as the executor runs it: a segment kind's plan for one stage replica of
// tensor_parallel devices (views on devices 0..tp-1) made a plan for tp x cp devices, the
// tensor-parallel ranks innermost (device t + tp x c is tensor rank t of sequence shard c, as
// PipelineGrid numbers a replica). Every token-wise operator runs on its shard's 1/cp of the
// sequence (dimension 1, dealt out contiguously: shard c holds positions [c s/cp, (c+1) s/cp)),
// each attention's queries too, its keys and values gathered from every shard (a Combine along the
// sequence, then a Replicate over the shards) and the causal mask and rotary positions taken at the
// shard's absolute offset. The weights are copied onto every shard (a Replicate over cp where an
// operator reading sequence rows reads them), so their gradients are summed over the shards, as a
// Replicate's backward does. The segment's input is read in parts (each shard its rows) and its
// output, unless it is the loss, gathered whole on the devices of shard 0.
//
// The cost model deals the sequence out in 2 x cp chunks (Megatron-Core's load balance for causal
// attention); the numbers computed are the same either way, only each shard's share of the
// attention's work differs.
#include <cstdint>
#include <map>

#include "unity/core/mapping/machine_view.h"
#include "unity/core/pcg/graph.h"

namespace unity {

struct ContextParallelPlan {
  Graph pcg;
  std::map<NodeId, MachineView> views;  // devices 0..tp x cp - 1
};

// The sequence a graph's attentions split: the first attention's query length (0: none).
std::int64_t attention_sequence(const Graph& graph);

// `plan` (with `views` on devices 0..tp-1) split by sequence over `cp` shards: its Inputs of
// [batch, `sequence`, ...] and what derives from them (a segment without attention has its
// model's sequence all the same, hence the argument). Names are kept; the
// operators added are named after the tensor they split or gather. Throws InputError naming the
// operator when one cannot run on part of the sequence (it reads across positions: a latent
// attention, a reduction over the sequence, an MSE loss per sample), when the sequence does not
// split into cp shards, or when a view splits the sequence in a way the shards cannot nest in.
ContextParallelPlan context_parallel_plan(const Graph& plan,
                                          const std::map<NodeId, MachineView>& views, int tp,
                                          int cp, std::int64_t sequence);

}  // namespace unity
