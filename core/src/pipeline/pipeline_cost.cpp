#include "unity/core/pipeline/pipeline_cost.h"

#include <algorithm>
#include <numeric>

namespace unity {

PipelineTime pipeline_time(const std::vector<double>& device_times, int micro_batches,
                           int interleave) {
  PipelineTime t;
  if (device_times.empty() || micro_batches < 1) return t;
  const double v = std::max(1, interleave);
  const double busiest = *std::max_element(device_times.begin(), device_times.end());
  const double sum = std::accumulate(device_times.begin(), device_times.end(), 0.0);
  t.time = (micro_batches - 1) * busiest + (sum + (v - 1) * busiest) / v;
  const double ideal = micro_batches * busiest;
  t.bubble = std::max(0.0, t.time - ideal);
  t.bubble_fraction = ideal > 0 ? t.bubble / ideal : 0;
  return t;
}

double in_flight_micro_batches(int rank, int stages, int micro_batches, int interleave) {
  if (interleave <= 1) return std::min(micro_batches, stages - rank);
  const double chunk_steps = (stages - rank - 1) * 2.0 + (interleave - 1.0) * stages + 1.0;
  return std::min<double>(chunk_steps, static_cast<double>(micro_batches) * interleave) /
         interleave;
}

double exposed_expert_alltoall(double alltoall, double partner, double alone, int comm_sms,
                               int sms) {
  const double hidden = alltoall * (1 - std::min(1.0, alone));
  const double overlapped = std::min(hidden, partner);
  const double slowed =
      sms > comm_sms ? overlapped * comm_sms / static_cast<double>(sms) : overlapped;
  return alltoall - hidden + std::max(0.0, hidden - partner) + slowed;
}

MemoryBreakdown parameter_memory(double parameters, DataType dtype, Optimizer optimizer, int zero,
                                 int data_parallel, double gradient_element) {
  MemoryBreakdown m;
  const double size = static_cast<double>(size_of(dtype));
  const double master = size < 4 ? 4.0 : 0.0;  // fp32 copy the optimizer updates
  const double state = 4.0 * optimizer_state_copies(optimizer);
  const double shards = std::max(1, data_parallel);
  m.weights = parameters * size / (zero >= 3 ? shards : 1);
  const double gradient = gradient_element > 0 ? gradient_element : gradient_bytes(dtype);
  m.gradients = parameters * gradient / (zero >= 2 ? shards : 1);
  m.optimizer = parameters * (master + state) / (zero >= 1 ? shards : 1);
  return m;
}

void set_expert_share(MemoryBreakdown& m, double parameters, int copies, double fp8_parameters,
                      DataType dtype, Optimizer optimizer, int zero, double gradient_element,
                      double fp8_copy) {
  const MemoryBreakdown e =
      parameter_memory(parameters, dtype, optimizer, zero, copies, gradient_element);
  m.expert_weights = e.weights + fp8_copy * fp8_parameters;
  m.expert_gradients = e.gradients;
  m.expert_optimizer = e.optimizer;
}

void add_segment_exchanges(ChunkExchanges& chunk, double alltoall, bool overlapped,
                           double exchange_forward, double exchange, bool alltoall_recomputed,
                           bool exchange_recomputed) {
  const double again = alltoall_recomputed ? 1.0 : 0.0;  // the forward pass's, run again
  chunk.alltoall.forward += alltoall / 2;
  chunk.alltoall.backward += alltoall / 2 * (1 + again);
  if (!overlapped) {
    chunk.alltoall_exposed.forward += alltoall / 2;
    chunk.alltoall_exposed.backward += alltoall / 2 * (1 + again);
  }
  chunk.context_exchange.forward += exchange_forward;
  chunk.context_exchange.backward +=
      exchange - exchange_forward + (exchange_recomputed ? exchange_forward : 0.0);
}

double overlapped_pass(double compute, double communication, int splits, int comm_sms, int sms) {
  if (communication <= 0) return compute;
  const double exposed =
      std::max(communication / std::max(1, splits), communication - std::max(0.0, compute));
  const double hidden = communication - exposed;
  const double slowdown =
      sms > comm_sms && comm_sms > 0 ? static_cast<double>(comm_sms) / (sms - comm_sms) : 0.0;
  return compute + exposed + hidden * slowdown;
}

bool sends_overlap_compute(int interleave, bool overlapped_stack) {
  return interleave > 1 && overlapped_stack;
}

double exposed_sends(double sends, double compute, bool overlapped) {
  return overlapped ? std::max(0.0, sends - compute) : sends;
}

double last_gradient_bucket(const std::vector<double>& weights, double bucket) {
  double open = 0, closed = 0;
  for (auto w = weights.rbegin(); w != weights.rend(); ++w) {
    open += *w;
    if (open >= bucket) {
      closed = open;
      open = 0;
    }
  }
  return open > 0 ? open : closed;
}

DataSync data_parallel_sync(const DataSyncInput& in,
                            const std::function<double(double)>& allreduce_time) {
  DataSync out;
  const int k = std::max(1, in.data_parallel);
  if (k == 1 || in.parameters <= 0) return out;
  const double grads = in.parameters * in.gradient_bytes;
  const double weights = in.parameters * in.weight_bytes;
  const double reduce_scatter = allreduce_time(grads) / 2;
  const double gather = allreduce_time(weights) / 2;
  const double bucket = std::max(40e6, 1e6 * k);
  out.last_bucket =
      std::min(in.parameters, in.first_chunk_weights.empty()
                                  ? bucket
                                  : last_gradient_bucket(in.first_chunk_weights, bucket));
  const double last_bucket = out.last_bucket / in.parameters;
  // What of `seconds` of communication a pass of `window` seconds leaves exposed.
  auto exposed = [&](double seconds, double window) {
    return in.overlap ? std::max(seconds * last_bucket, seconds - window) : seconds;
  };
  const double m = std::max(1, in.micro_batches);
  const double per_copy = k - 1.0;  // a ring's bytes: (k - 1) / k of the buffer from each copy
  switch (in.zero) {
    case 0:
      out.total = 2 * reduce_scatter;
      out.exposed = exposed(out.total, in.backward);
      out.bytes = 2 * per_copy * grads;
      break;
    case 1:
      out.total = reduce_scatter + gather;
      out.exposed = exposed(reduce_scatter, in.backward) + exposed(gather, in.forward);
      out.bytes = per_copy * (grads + weights);
      break;
    case 2:
      out.total = m * reduce_scatter + gather;
      out.exposed = (m - 1) * (in.overlap ? std::max(0.0, reduce_scatter - in.forward - in.backward)
                                          : reduce_scatter) +
                    exposed(reduce_scatter, in.backward) + exposed(gather, in.forward);
      out.bytes = per_copy * (m * grads + weights);
      break;
    default:
      out.total = m * (2 * gather + reduce_scatter);
      out.exposed =
          m * (exposed(gather, in.forward) + exposed(gather + reduce_scatter, in.backward));
      out.bytes = per_copy * m * (2 * weights + grads);
      break;
  }
  // The compute that hides the rest runs on the SMs the collectives leave it.
  if (in.sms > in.comm_sms && in.comm_sms > 0)
    out.exposed += (out.total - out.exposed) * in.comm_sms / (in.sms - in.comm_sms);
  return out;
}

}  // namespace unity
