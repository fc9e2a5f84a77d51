#pragma once
// The window attributes of Conv2D, Pool2D and ConvTranspose (`kernel`, `stride`, `padding`,
// `dilation`, `output_padding`): one entry per spatial dim of x, which has 1, 2 or 3 of them
// ([N, C, L], [N, C, H, W], [N, C, D, H, W]); a list of one entry applies to every spatial dim.
// The operator keeps its name whatever its spatial rank (a 2-D node is what it always was).
#include <array>
#include <cstdint>
#include <vector>

#include "unity/core/errors.h"
#include "unity/core/pcg/operator.h"

namespace unity {

constexpr int kMaxSpatialRank = 3;

// Throws ShapeError when the list has neither 1 nor `spatial_rank` entries.
inline std::vector<std::int64_t> window_attr(const Operator& op, const char* name, int spatial_rank,
                                             std::vector<std::int64_t> fallback) {
  auto v = op.attrs.has(name) ? op.attrs.get_ints(name) : std::move(fallback);
  if (v.size() == 1 && spatial_rank > 1) v.assign(static_cast<std::size_t>(spatial_rank), v[0]);
  if (static_cast<int>(v.size()) != spatial_rank)
    throw ShapeError("attribute '" + std::string(name) + "' must have " +
                     std::to_string(spatial_rank) + " values (one per spatial dim), got " +
                     std::to_string(v.size()));
  return v;
}

// The same list widened to three spatial dims (depth, height, width) by leading `fill` entries:
// a 1-D window is a 3-D one of depth and height 1, which is how the kernels run every rank.
inline std::array<std::int64_t, kMaxSpatialRank> window3(const std::vector<std::int64_t>& v,
                                                         std::int64_t fill) {
  std::array<std::int64_t, kMaxSpatialRank> out{fill, fill, fill};
  const std::size_t lead = kMaxSpatialRank - v.size();
  for (std::size_t i = 0; i < v.size(); ++i) out[lead + i] = v[i];
  return out;
}

}  // namespace unity
