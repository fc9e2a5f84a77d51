#include "unity/core/pipeline/alltoall_overlap.h"

#include <fmt/format.h>

namespace unity {
namespace {

bool has_expert_parallelism(const AllToAllOverlapLayout& l) { return l.ep >= 2; }
bool has_virtual_stages_if_pipelined(const AllToAllOverlapLayout& l) {
  return l.pp == 1 || l.interleave >= 2;
}
bool has_no_full_recompute(const AllToAllOverlapLayout& l) {
  return l.recompute != Recompute::Full;
}

}  // namespace

bool alltoall_overlap_taken(const AllToAllOverlapLayout& layout) {
  return has_expert_parallelism(layout) && has_virtual_stages_if_pipelined(layout) &&
         has_no_full_recompute(layout) && layout.half_precision;
}

std::vector<AllToAllOverlapMiss> alltoall_overlap_misses(const AllToAllOverlapLayout& layout) {
  std::vector<AllToAllOverlapMiss> out;
  if (!has_expert_parallelism(layout))
    out.push_back({"expert parallelism", fmt::format("EP {}", layout.ep)});
  if (!has_virtual_stages_if_pipelined(layout))
    out.push_back({"virtual stages when PP > 1", fmt::format("PP {} without them", layout.pp)});
  if (!has_no_full_recompute(layout))
    out.push_back({"no full recomputation", "full recomputation"});
  if (!layout.half_precision) out.push_back({"bf16 or fp16", "fp32"});
  return out;
}

}  // namespace unity
