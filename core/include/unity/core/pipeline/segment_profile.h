#pragma once
// What one segment of a model costs a pipeline stage for one micro-batch, once planned on the
// devices of one stage replica: time forward and backward (the tensor-parallel collectives inside
// included), the weights and activations its busiest device holds, and the FLOPs Megatron-LM
// counts for it. The planner composes stages from these.
#include <string>
#include <vector>

#include "unity/core/cost/cost_model.h"
#include "unity/core/cost/flop_count.h"
#include "unity/core/pcg/graph.h"
#include "unity/core/pipeline/recompute_modules.h"
#include "unity/core/search/substitution_search.h"

namespace unity {

struct SegmentProfile {
  double forward = 0;              // seconds per micro-batch, collectives included
  double backward = 0;             // seconds per micro-batch, collectives included
  double attention_core = 0;       // of forward: the attention's scores and softmax (selective)
  double experts_time = 0;         // of forward + backward: the Experts operators' (what a
                                   // micro-batch's all-to-alls cannot hide behind)
  double whole_forward = 0;        // of forward: operators whose output each device holds whole
  double whole_backward = 0;       // (norms, residual sums; sequence parallelism splits them)
  double communication = 0;        // of forward + backward: collectives inside the stage replica
  double bytes = 0;                // bytes the replica's devices send per micro-batch
  double parameters = 0;           // weight elements on the busiest device
  double fp8_parameters = 0;       // of which read by GEMMs that run in fp8 (runs_fp8_gemms),
                                   // whose fp8 copies the device also holds
  double activations = 0;          // bytes kept for the backward on the busiest device
  double whole_activations = 0;    // of which tensors each device holds whole (sequence
                                   // parallelism splits them over the replica)
  double attention_internals = 0;  // of which the attention's probabilities (what selective
                                   // recomputation drops)
  double input_bytes = 0;          // the activation entering the segment, whole
  // What each recomputation module (recompute_modules.h) runs again and drops, beside the
  // attention's (attention_core, attention_internals): the normalisations' forward seconds and
  // their outputs kept by their readers; the experts' activation function (a memory-bound pass
  // over the up projections' output) and its output; the mixture-of-experts layers' forward
  // (router and experts) and all they keep but their input. Bytes on the busiest device.
  double norm_forward = 0, norm_outputs = 0;
  double expert_act_forward = 0, expert_act_outputs = 0;
  double moe_forward = 0, moe_internals = 0;
  // Per attention operator: the keys and values of the whole sequence for one device's heads
  // (what context parallelism exchanges, context_exchange.h) and its products' seconds in each
  // pass on one device.
  struct Attention {
    double kv_bytes = 0, products_forward = 0, products_backward = 0;
  };
  std::vector<Attention> attentions;
  // The elements of each weight the busiest device holds, in the order the segment's operators
  // run, the experts' left out (frameworks keep them in buffers of their own): how the
  // data-parallel reduce buckets them (last_gradient_bucket).
  std::vector<double> dense_weights;
  bool feasible = false;  // a mapping exists on the replica's devices
};

// What selective recomputation of `modules` runs again in the backward pass (forward seconds)
// and does not keep (bytes on the busiest device), from a segment's profile. The moe module's
// all-to-alls, sent again, are the planner's to add.
struct Recomputed {
  double seconds = 0, bytes = 0;
};
Recomputed selective_recomputation(const SegmentProfile& s, RecomputeModules modules);

// Costs `plan` (a segment's PCG for one micro-batch) with `model`, whose machine is one stage
// replica's devices and which leaves weight updates out (CostModel::set_counts_weight_updates).
SegmentProfile profile_segment(const Graph& plan, const CostModel& model);

// Forward FLOPs of a serial graph's dense operators (Linear, MatMul, BatchMatMul, Conv2D, the
// attention operators and Experts): what Megatron-LM's FLOP formula counts, a causal attention's
// products in full or at half (flop_count.h).
double dense_forward_flops(const Graph& graph, FlopCount count = FlopCount::Full);

}  // namespace unity
