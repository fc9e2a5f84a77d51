#pragma once
// The cost of a pipelined training iteration from its stages' per-micro-batch times (Megatron-LM,
// Narayanan et al. SC'21, sections 2.2 and 3), and the memory of one device by kind (ZeRO,
// Rajbhandari et al. SC'20, section 3.1, for the bytes per parameter of mixed-precision Adam).
// Pure arithmetic, so that a schedule's bubble and a device's bytes can be checked by hand.
#include <vector>

#include "unity/core/cost/cost_model.h"
#include "unity/core/pcg/data_type.h"

namespace unity {

struct PipelineTime {
  double time = 0;             // seconds from the first forward to the last backward (the flush)
  double bubble = 0;           // of which the devices wait: time - m x the busiest device's work
  double bubble_fraction = 0;  // bubble / (m x the busiest device's work): (p-1)/(v m) if balanced
};

// 1F1B over `device_times` (per micro-batch, forward + backward + point-to-point, of each pipeline
// rank: the sum of its `interleave` model chunks) with `micro_batches` micro-batches. The first
// micro-batch passes every chunk once before the busiest rank is fed every step, so
//   time = (m - 1) x max_d T_d + (sum_d T_d + (v - 1) x max_d T_d) / v,
// which is (m + p - 1) T for p balanced stages (bubble (p-1)/m of the ideal m T) and
// m T + (p - 1) T / v with v chunks per device.
PipelineTime pipeline_time(const std::vector<double>& device_times, int micro_batches,
                           int interleave = 1);

// Micro-batches whose activations pipeline rank `rank` of `stages` holds at its peak, in units of
// one micro-batch through all of the rank's chunks: min(m, p - rank) for 1F1B; with v chunks per
// device the warm-up runs (p - rank - 1) x 2 + (v - 1) x p chunk-steps ahead, each 1/v of it.
double in_flight_micro_batches(int rank, int stages, int micro_batches, int interleave = 1);

// What one device holds, by kind (bytes).
struct MemoryBreakdown {
  double weights = 0;      // in the compute dtype
  double gradients = 0;    // in the compute dtype
  double optimizer = 0;    // fp32 master weights (mixed precision) and the optimizer's state
  double activations = 0;  // kept for the backward pass, for every micro-batch in flight
  double workspace = 0;    // transient: a recomputed block's activations, ZeRO-3's gathered layer
  double total() const { return weights + gradients + optimizer + activations + workspace; }
};

// Bytes for `parameters` weights held on a device in `dtype`, with `optimizer`, sharded by ZeRO
// stage `zero` (1: optimizer state, 2: and gradients, 3: and weights) over `data_parallel` copies.
// Mixed precision (a 2-byte dtype) keeps fp32 master weights with the optimizer state: Adam in
// fp16 is 2 + 2 + 12 = 16 bytes a parameter (ZeRO's K = 12).
MemoryBreakdown parameter_memory(double parameters, DataType dtype, Optimizer optimizer, int zero,
                                 int data_parallel);

}  // namespace unity
