#pragma once
// How a reshape maps dims to dims: the input and the output split into consecutive groups of equal
// element count ([T, B, E] -> [T, B*H, E/H] is {T}->{T}, {B, E}->{B*H, E/H}). A partition of a
// group's outermost non-unit input dim stays a partition of its outermost non-unit output dim: each
// piece is one contiguous row-major block of the group on both sides, so a reshape of the local
// piece is the reshape of the whole. Shape inference and the executor's piece regions both read
// this.
#include <cstdint>
#include <vector>

namespace unity {

struct ReshapeGroup {
  int in_begin = 0, in_end = 0;    // input dims [in_begin, in_end)
  int out_begin = 0, out_end = 0;  // output dims [out_begin, out_end)
  int in_lead = -1;                // the outermost input dim of size > 1, -1 when none
  int out_lead = -1;               // the outermost output dim of size > 1, -1 when none
};

// Requires equal element counts (the caller checks and names the node).
std::vector<ReshapeGroup> reshape_groups(const std::vector<std::int64_t>& in,
                                         const std::vector<std::int64_t>& out);

}  // namespace unity
