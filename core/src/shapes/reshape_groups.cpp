#include "unity/core/shapes/reshape_groups.h"

namespace unity {
namespace {

int first_non_unit(const std::vector<std::int64_t>& sizes, int begin, int end) {
  for (int d = begin; d < end; ++d)
    if (sizes[d] > 1) return d;
  return -1;
}

}  // namespace

std::vector<ReshapeGroup> reshape_groups(const std::vector<std::int64_t>& in,
                                         const std::vector<std::int64_t>& out) {
  const int rin = static_cast<int>(in.size()), rout = static_cast<int>(out.size());
  std::vector<ReshapeGroup> groups;
  int i = 0, j = 0;
  while (i < rin || j < rout) {
    ReshapeGroup g;
    g.in_begin = i;
    g.out_begin = j;
    std::int64_t pi = i < rin ? in[i++] : 1;
    std::int64_t po = j < rout ? out[j++] : 1;
    while (pi != po) {
      if (pi < po && i < rin)
        pi *= in[i++];
      else if (j < rout)
        po *= out[j++];
      else
        break;  // unequal element counts: the caller has refused them already
    }
    // Unit dims that follow belong to this group, so every group starts with a real dim.
    while (i < rin && in[i] == 1 && !(j < rout && out[j] == 1)) ++i;
    while (j < rout && out[j] == 1 && !(i < rin && in[i] == 1)) ++j;
    g.in_end = i;
    g.out_end = j;
    g.in_lead = first_non_unit(in, g.in_begin, g.in_end);
    g.out_lead = first_non_unit(out, g.out_begin, g.out_end);
    groups.push_back(g);
  }
  return groups;
}

}  // namespace unity
