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

MemoryBreakdown parameter_memory(double parameters, DataType dtype, Optimizer optimizer, int zero,
                                 int data_parallel) {
  MemoryBreakdown m;
  const double size = static_cast<double>(size_of(dtype));
  const double master = size < 4 ? 4.0 : 0.0;  // fp32 copy the optimizer updates
  const double state = 4.0 * optimizer_state_copies(optimizer);
  const double shards = std::max(1, data_parallel);
  m.weights = parameters * size / (zero >= 3 ? shards : 1);
  m.gradients = parameters * size / (zero >= 2 ? shards : 1);
  m.optimizer = parameters * (master + state) / (zero >= 1 ? shards : 1);
  return m;
}

}  // namespace unity
