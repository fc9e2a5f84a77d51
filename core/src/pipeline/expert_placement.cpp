#include "unity/core/pipeline/expert_placement.h"

#include <algorithm>
#include <vector>

namespace unity {

ExpertPlacement expert_placement(const PipelinePlan& plan, int device) {
  ExpertPlacement e;
  const PipelineGrid grid = plan.grid();
  const int devices = grid.replica() * grid.dp * grid.pp;
  if (device < 0 || device >= devices) return e;
  const GridPosition at = grid.position(device);
  e.stage = at.stage;
  if (plan.experts <= 0) return e;
  const int ep = std::max(1, plan.expert_parallel);
  const int etp = std::max(1, plan.expert_tensor_parallel);
  const int i = at.copy * grid.replica() + at.index;  // the device's place in its rank
  // Megatron-Core's expert ranks: the slices of an expert innermost, then the expert groups.
  e.group = i / (ep * etp);
  e.ep_rank = i / etp % ep;
  e.etp_rank = i % etp;
  const std::int64_t held = plan.experts / ep;
  e.first_expert = e.ep_rank * held;
  e.last_expert = e.first_expert + held - 1;
  return e;
}

AlltoallTraffic alltoall_traffic(const PipelinePlan& plan) {
  AlltoallTraffic t;
  t.bytes = plan.alltoall_bytes;
  t.inter_node_bytes = plan.alltoall_inter_node_bytes;
  t.seconds = plan.alltoall_time;
  // Per rank, a micro-batch's all-to-alls in all its chunks, and the part its passes wait for.
  const int p = std::max(1, plan.pipeline_stages);
  std::vector<double> total(static_cast<std::size_t>(p), 0.0), exposed = total;
  for (const StagePlan& c : plan.chunks) {
    const auto r = static_cast<std::size_t>(c.rank % p);
    total[r] += c.exchanges.alltoall.total();
    exposed[r] += c.exchanges.alltoall_exposed.total();
  }
  for (int r = 1; r < p; ++r)
    if (total[static_cast<std::size_t>(r)] > total[static_cast<std::size_t>(t.busiest_rank)])
      t.busiest_rank = r;
  t.exposed = plan.micro_batches * exposed[static_cast<std::size_t>(t.busiest_rank)];
  return t;
}

}  // namespace unity
