#include "unity/core/pipeline/training_setup.h"

#include <vector>

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity {

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::Selective:
      return "selective";
    case Recompute::Full:
      return "full";
    default:
      return "none";
  }
}

Recompute recompute_from_string(std::string_view name) {
  for (auto r : {Recompute::None, Recompute::Selective, Recompute::Full})
    if (to_string(r) == name) return r;
  throw InputError(
      fmt::format("unknown recomputation '{}' (expected full, selective or none)", name));
}

std::string describe_recompute(Recompute level, RecomputeModules modules) {
  if (level != Recompute::Selective || modules.is_default()) return std::string(to_string(level));
  return fmt::format("selective ({})", to_string(modules));
}

void LayoutRequest::set_recompute(std::string_view level, std::string_view modules) {
  if (!level.empty()) recompute = recompute_from_string(level);
  if (modules.empty()) return;
  recompute_modules = recompute_modules_from_string(modules);
  if (recompute && *recompute != Recompute::Selective)
    throw InputError(fmt::format("--recompute-modules {} needs --recompute selective, not {}",
                                 modules, to_string(*recompute)));
  recompute = Recompute::Selective;
}

std::string LayoutRequest::describe() const {
  std::vector<std::string> parts;
  if (tensor_parallel) parts.push_back(fmt::format("--tp {}", tensor_parallel));
  if (pipeline_stages) parts.push_back(fmt::format("--pp {}", pipeline_stages));
  if (micro_batches) parts.push_back(fmt::format("--micro-batches {}", micro_batches));
  if (interleave) parts.push_back(fmt::format("--interleave {}", interleave));
  if (recompute) parts.push_back(fmt::format("--recompute {}", to_string(*recompute)));
  if (!recompute_modules.is_default())
    parts.push_back(fmt::format("--recompute-modules {}", to_string(recompute_modules)));
  if (zero_stage >= 0) parts.push_back(fmt::format("--zero {}", zero_stage));
  if (sequence_parallel && *sequence_parallel) parts.emplace_back("--sequence-parallel");
  if (overlap_grad_reduce && *overlap_grad_reduce) parts.emplace_back("--overlap-grad-reduce");
  if (tp_comm_overlap && *tp_comm_overlap) parts.emplace_back("--tp-comm-overlap");
  if (device_order) parts.push_back(fmt::format("--device-order {}", to_string(*device_order)));
  if (expert_parallel) parts.push_back(fmt::format("--ep {}", expert_parallel));
  if (expert_tensor_parallel) parts.push_back(fmt::format("--etp {}", expert_tensor_parallel));
  if (dispatcher) parts.push_back(fmt::format("--dispatcher {}", to_string(*dispatcher)));
  if (ep_comm_overlap && *ep_comm_overlap) parts.emplace_back("--overlap-moe-expert-parallel-comm");
  if (context_parallel) parts.push_back(fmt::format("--cp {}", context_parallel));
  if (context_exchange) parts.push_back(fmt::format("--cp-comm {}", to_string(*context_exchange)));
  if (embedding_in_split) parts.emplace_back("--account-for-embedding-in-pipeline-split");
  if (loss_in_split) parts.emplace_back("--account-for-loss-in-pipeline-split");
  if (!launcher.empty())
    parts.push_back(fmt::format("--launcher {}", launcher));
  else if (launchable)
    parts.emplace_back("--launchable");
  if (!expert_load.dropless())
    parts.push_back(fmt::format("--moe-expert-capacity-factor {}", expert_load.capacity_factor));
  else if (expert_load.imbalance != 1)
    parts.push_back(fmt::format("--moe-load-imbalance {}", expert_load.imbalance));
  if (grad_reduce_in_bf16) parts.emplace_back("--grad-reduce-in-bf16");
  if (fp8_param_gather) parts.emplace_back("--fp8-param-gather");
  return fmt::format("{}", fmt::join(parts, " "));
}

}  // namespace unity
