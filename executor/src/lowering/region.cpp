#include "unity/executor/region.h"

#include <algorithm>

#include <fmt/format.h>

namespace unity::executor {

std::vector<std::int64_t> Region::extents() const {
  std::vector<std::int64_t> e(begin.size());
  for (std::size_t d = 0; d < begin.size(); ++d) e[d] = end[d] - begin[d];
  return e;
}

std::int64_t Region::num_elements() const {
  std::int64_t n = 1;
  for (std::size_t d = 0; d < begin.size(); ++d) n *= end[d] - begin[d];
  return n;
}

bool Region::contains(const Region& inner) const {
  if (inner.rank() != rank()) return false;
  for (int d = 0; d < rank(); ++d)
    if (inner.begin[d] < begin[d] || inner.end[d] > end[d]) return false;
  return true;
}

std::string Region::to_string() const {
  std::string s = "[";
  for (int d = 0; d < rank(); ++d) s += fmt::format("{}{}:{}", d ? ", " : "", begin[d], end[d]);
  return s + "]";
}

Region full_region(const std::vector<std::int64_t>& sizes) {
  return {std::vector<std::int64_t>(sizes.size(), 0), sizes};
}

Region bounding_box(const Region& a, const Region& b) {
  Region r = a;
  for (int d = 0; d < a.rank(); ++d) {
    r.begin[d] = std::min(a.begin[d], b.begin[d]);
    r.end[d] = std::max(a.end[d], b.end[d]);
  }
  return r;
}

std::optional<Region> intersect(const Region& a, const Region& b) {
  Region r;
  r.begin.resize(a.begin.size());
  r.end.resize(a.begin.size());
  for (std::size_t d = 0; d < a.begin.size(); ++d) {
    r.begin[d] = std::max(a.begin[d], b.begin[d]);
    r.end[d] = std::min(a.end[d], b.end[d]);
    if (r.begin[d] >= r.end[d]) return std::nullopt;
  }
  return r;
}

PieceIndex piece_index(const ParallelTensorShape& shape, int linear) {
  PieceIndex p;
  p.replica = linear % shape.replica;
  linear /= shape.replica;
  p.block.resize(shape.dims.size());
  for (int d = shape.rank() - 1; d >= 0; --d) {
    p.block[d] = linear % shape.dims[d].degree;
    linear /= shape.dims[d].degree;
  }
  return p;
}

int piece_linear(const ParallelTensorShape& shape, const PieceIndex& index) {
  int linear = 0;
  for (int d = 0; d < shape.rank(); ++d) linear = linear * shape.dims[d].degree + index.block[d];
  return linear * shape.replica + index.replica;
}

Region piece_region(const ParallelTensorShape& shape, const std::vector<int>& block) {
  Region r;
  for (int d = 0; d < shape.rank(); ++d) {
    const std::int64_t step = shape.dims[d].size / shape.dims[d].degree;
    r.begin.push_back(block[d] * step);
    r.end.push_back((block[d] + 1) * step);
  }
  return r;
}

Region piece_region(const ParallelTensorShape& shape, int linear) {
  return piece_region(shape, piece_index(shape, linear).block);
}

std::int64_t offset_in(const Region& box, const std::vector<std::int64_t>& at) {
  std::int64_t offset = 0;
  for (int d = 0; d < box.rank(); ++d) offset = offset * box.extent(d) + (at[d] - box.begin[d]);
  return offset;
}

bool is_contiguous_within(const Region& outer, const Region& inner) {
  // Contiguous when, after the first dim where `inner` is shorter than `outer`, every later dim is
  // whole, and every earlier dim has extent 1.
  int first_partial = -1;
  for (int d = 0; d < outer.rank(); ++d) {
    const bool whole = inner.begin[d] == outer.begin[d] && inner.end[d] == outer.end[d];
    if (first_partial >= 0) {
      if (!whole) return false;
    } else if (!whole) {
      first_partial = d;
    }
  }
  if (first_partial < 0) return true;
  for (int d = 0; d < first_partial; ++d)
    if (inner.extent(d) != 1) return false;
  return true;
}

}  // namespace unity::executor
