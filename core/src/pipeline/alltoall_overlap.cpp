#include "unity/core/pipeline/alltoall_overlap.h"

#include <fmt/format.h>

namespace unity {

std::vector<AllToAllOverlapMiss> alltoall_overlap_misses(const AllToAllOverlapLayout& layout) {
  std::vector<AllToAllOverlapMiss> out;
  if (layout.ep < 2) out.push_back({"expert parallelism", fmt::format("EP {}", layout.ep)});
  if (layout.pp > 1 && layout.interleave < 2)
    out.push_back({"virtual stages when PP > 1", fmt::format("PP {} without them", layout.pp)});
  if (layout.recompute == Recompute::Full)
    out.push_back({"no full recomputation", "full recomputation"});
  if (!layout.half_precision) out.push_back({"bf16 or fp16", "fp32"});
  return out;
}

}  // namespace unity
