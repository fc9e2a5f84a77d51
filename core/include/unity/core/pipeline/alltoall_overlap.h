#pragma once
// What Megatron-Core's TransformerConfig asserts of --overlap-moe-expert-parallel-comm (one
// micro-batch's expert all-to-alls behind another's compute). One rule for the three places that
// apply it: the layout search offers a launchable plan only overlaps Megatron-Core takes, a fixed
// flag that asks for one it refuses is refused, and Megatron-LM's export names what a plan
// misses.
#include <string>
#include <vector>

#include "unity/core/pipeline/training_setup.h"

namespace unity {

struct AllToAllOverlapLayout {
  int ep = 2;
  int pp = 1;
  int interleave = 1;  // model chunks per device
  Recompute recompute = Recompute::None;
  bool half_precision = true;  // bf16 or fp16 (fp8's GEMMs included), not fp32
};

// Whether Megatron-Core takes the overlap in this layout: what the layout search asks of each
// layout it considers, so it builds no message.
bool alltoall_overlap_taken(const AllToAllOverlapLayout& layout);

// A requirement the layout misses: what the overlap needs, and what the layout has instead.
struct AllToAllOverlapMiss {
  std::string needs;  // "virtual stages when PP > 1"
  std::string has;    // "PP 2 without them"
};

// Every requirement the layout misses (none where alltoall_overlap_taken), named.
std::vector<AllToAllOverlapMiss> alltoall_overlap_misses(const AllToAllOverlapLayout& layout);

}  // namespace unity
