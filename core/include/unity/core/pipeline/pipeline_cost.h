#pragma once
// The cost of a pipelined training iteration from its stages' per-micro-batch times (Megatron-LM,
// Narayanan et al. SC'21, sections 2.2 and 3), and the memory of one device by kind (ZeRO,
// Rajbhandari et al. SC'20, section 3.1, for the bytes per parameter of mixed-precision Adam).
// Pure arithmetic, so that a schedule's bubble and a device's bytes can be checked by hand.
#include <functional>
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
  double gradients = 0;    // in the compute dtype; fp32 for bf16 (gradient_bytes)
  double optimizer = 0;    // fp32 master weights (mixed precision) and the optimizer's state
  double activations = 0;  // kept for the backward pass, for every micro-batch in flight
  double workspace = 0;    // transient: a recomputed block's activations, ZeRO-3's gathered layer
  // Of weights, gradients and optimizer, the mixture-of-experts layers' experts that the device
  // holds (its 1/ep share of each layer's experts under expert parallelism, with their state
  // sharded over the expert-data-parallel copies): part of those kinds, not added to the total.
  double expert_weights = 0;
  double expert_gradients = 0;
  double expert_optimizer = 0;
  double total() const { return weights + gradients + optimizer + activations + workspace; }
  double experts() const { return expert_weights + expert_gradients + expert_optimizer; }
};

// The experts' share of a device's parameter memory (MemoryBreakdown::expert_*): `parameters`
// expert weight elements held as parameter_memory holds them, sharded over `copies` (the
// expert-data-parallel devices holding the same experts), plus the fp8 copies of `fp8_parameters`
// of them (`fp8_copy` bytes each: Transformer Engine's cast and transposed weights, 2; none where
// the weights are held in fp8 themselves). Sets the shares only: the kinds themselves already
// count them.
void set_expert_share(MemoryBreakdown& m, double parameters, int copies, double fp8_parameters,
                      DataType dtype, Optimizer optimizer, int zero, double gradient_element = 0,
                      double fp8_copy = 2);

// Seconds of one micro-batch in a pipeline chunk's forward and backward passes.
struct PassSeconds {
  double forward = 0, backward = 0;
  double total() const { return forward + backward; }
};
// What a chunk's exchanges between devices take in its passes, per micro-batch: the expert
// all-to-alls (dispatch and combine in the forward pass, their gradients in the backward), of
// those what the passes wait for (the rest runs behind another micro-batch's compute), and the
// context-parallel exchange of keys and values (exposed: what outlasts the attention's products).
// Full recomputation runs the forward pass's again in the backward pass.
struct ChunkExchanges {
  PassSeconds alltoall;
  PassSeconds alltoall_exposed;
  PassSeconds context_exchange;
};
// Adds one segment's: `alltoall` seconds of all-to-alls per micro-batch (half in each pass), all
// exposed unless `overlapped` (the caller adds the exposed part then), and `exchange` seconds of
// K/V exchange of which `exchange_forward` in the forward pass; a recomputed forward (full
// recomputation; the moe module for the all-to-alls) sends its part again in the backward pass.
void add_segment_exchanges(ChunkExchanges& chunk, double alltoall, bool overlapped,
                           double exchange_forward, double exchange, bool alltoall_recomputed,
                           bool exchange_recomputed);

// Bytes for `parameters` weights held on a device in `dtype`, with `optimizer`, sharded by ZeRO
// stage `zero` (1: optimizer state, 2: and gradients, 3: and weights) over `data_parallel` copies.
// Mixed precision (a 2-byte dtype) keeps fp32 master weights with the optimizer state: Adam in
// fp16 is 2 + 2 + 12 = 16 bytes a parameter (ZeRO's K = 12); in bf16, whose gradients are fp32
// (gradient_bytes), 2 + 4 + 12 = 18.
// `gradient_element`: bytes a gradient element is kept in where the recipe says (0:
// gradient_bytes(dtype)).
MemoryBreakdown parameter_memory(double parameters, DataType dtype, Optimizer optimizer, int zero,
                                 int data_parallel, double gradient_element = 0);

// The data-parallel synchronisation of one pipeline rank's weights over its copies, once an
// iteration (Megatron-Core's distributed data parallelism):
// - ZeRO 0 all-reduces the gradients; ZeRO 1 reduce-scatters them and all-gathers the updated
//   weights (the distributed optimizer); ZeRO 2 reduce-scatters every micro-batch's gradients;
//   ZeRO 3 also gathers the weights before each micro-batch's forward and backward pass.
// - With `overlap`, gradients are reduced bucket by bucket while the last micro-batch's backward
//   pass runs (--overlap-grad-reduce) and the weights gathered while the first forward runs
//   (--overlap-param-gather): only what outlasts that pass is exposed, and never less than the
//   last bucket's share. Buckets hold max(40M, 1M x copies) parameters (Megatron-Core's default)
//   of whole weights, formed from the model's end (last_gradient_bucket): the bucket of the
//   rank's first weights is the last the backward pass fills, so its reduce has no compute left
//   to hide behind, and the first the next forward pass waits for. A large first weight (a
//   vocabulary's embedding) makes it larger than the others.
//   ZeRO 2's reduce of each micro-batch but the last runs while the rank computes the next one
//   (its forward and backward passes, as FSDP's reduce-scatter stream does); the last one's hides
//   behind its own backward only.
// A reduce-scatter or an all-gather takes half an all-reduce of the same buffer.
struct DataSyncInput {
  double parameters = 0;      // weight elements of one device
  double gradient_bytes = 2;  // per element, as reduced (gradient_bytes())
  double weight_bytes = 2;    // per element, as gathered
  int zero = 0;
  int micro_batches = 1;
  bool overlap = false;
  double forward = 0;   // seconds of one micro-batch's forward pass on the rank
  double backward = 0;  // and of its backward pass
  int data_parallel = 1;
  // The elements of the rank's weights in the order its first chunk runs them
  // (SegmentProfile::dense_weights); empty: buckets of the default size throughout.
  std::vector<double> first_chunk_weights;
  // What hidden communication costs the compute beside it: the collective's kernels hold
  // `comm_sms` of the device's `sms` streaming multiprocessors while they run (0: nothing).
  int sms = 0;
  int comm_sms = 0;
};
struct DataSync {
  double exposed = 0;  // seconds added to the iteration (with the compute the hidden part slowed)
  double total = 0;    // seconds of communication, hidden or not
  double bytes = 0;    // bytes the copies send in all
  double last_bucket = 0;  // weight elements in the last bucket (exposed whatever the overlap)
};
// One pass of a segment whose tensor-parallel collectives (`communication` seconds) are pipelined
// with its `compute` (Transformer Engine's userbuffers, Megatron-Core's --tp-comm-overlap): the
// GEMM and its collective are cut into `splits` pieces, so one piece's communication stays exposed
// and so does whatever outlasts the compute; while the rest runs hidden, its kernels hold
// `comm_sms` of the device's `sms` streaming multiprocessors, which the compute loses. TE's
// defaults: reduce-scatters pipelined in 4 splits on 16 SMs, all-gathers exchanged in a ring of
// tp splits on 1 SM (transformer_engine/pytorch/module/base.py, initialize_ub); the planner uses
// the reduce-scatter's, the costlier.
double overlapped_pass(double compute, double communication, int splits, int comm_sms, int sms);

// Whether a pipeline's point-to-point sends run behind its compute: Megatron-Core's interleaved
// schedule overlaps them (--overlap-p2p-communication, on by default in the stack that overlaps
// the data-parallel reduce); plain 1F1B, and SC'21's interleaved schedule, wait for each send.
bool sends_overlap_compute(int interleave, bool overlapped_stack);
// Of a chunk's `sends` seconds beside its `compute` seconds, what the iteration pays: all of them,
// or with overlapped sends what outlasts the compute.
double exposed_sends(double sends, double compute, bool overlapped);

// Of a micro-batch's expert all-to-alls (`alltoall` seconds) under the batch-level overlap
// (Megatron-Core's --overlap-moe-expert-parallel-comm), what the iteration pays: in the 1F1B
// steady state they run behind another micro-batch's dense compute (`partner` seconds: attention,
// norms, projections, not its experts, which wait for their own dispatch), their kernels holding
// `comm_sms` of the device's `sms` meanwhile, which that compute loses; the `alone` share of the
// micro-batches (the warm-up's and cool-down's) have no partner, and whatever outlasts the
// partner's compute stays exposed too.
double exposed_expert_alltoall(double alltoall, double partner, double alone, int comm_sms,
                               int sms);

// `allreduce_time(bytes)`: an all-reduce of `bytes` on every device of the data-parallel group.
// The elements of the last bucket Megatron-Core's gradient buffer forms from `weights` (in the
// order the forward pass runs them): walking them from the last, a bucket closes once it holds
// `bucket` elements or more, whole weights only (param_and_grad_buffer.py); what is left at the
// first weight is the last bucket, or the last one closed when nothing is.
double last_gradient_bucket(const std::vector<double>& weights, double bucket);

DataSync data_parallel_sync(const DataSyncInput& in,
                            const std::function<double(double)>& allreduce_time);

}  // namespace unity
