#pragma once
// A region of a logical tensor: a half-open box [begin, end) per dimension in global coordinates.
// Pieces of a parallel tensor, what a task reads, and what moves between ranks are all regions, so
// that one rule (intersect, copy the overlap) redistributes data between any two partitionings.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "unity/core/shapes/parallel_tensor_shape.h"

namespace unity::executor {

struct Region {
  std::vector<std::int64_t> begin;
  std::vector<std::int64_t> end;

  int rank() const { return static_cast<int>(begin.size()); }
  std::int64_t extent(int d) const { return end[d] - begin[d]; }
  std::vector<std::int64_t> extents() const;
  std::int64_t num_elements() const;
  bool contains(const Region& inner) const;
  std::string to_string() const;
  bool operator==(const Region&) const = default;
};

// The whole tensor.
Region full_region(const std::vector<std::int64_t>& sizes);
// The smallest region holding both (same rank).
Region bounding_box(const Region& a, const Region& b);
// Overlap of two regions of the same rank; nullopt when they do not overlap.
std::optional<Region> intersect(const Region& a, const Region& b);

// Index of a piece of a parallel tensor: one block index per dim (0..degree-1) and a replica index.
// Pieces are numbered row-major over (degrees..., replica), the order in which machine views number
// tasks, so piece i of a placed operator's output is produced by task i.
struct PieceIndex {
  std::vector<int> block;
  int replica = 0;
  bool operator==(const PieceIndex&) const = default;
};

PieceIndex piece_index(const ParallelTensorShape& shape, int linear);
int piece_linear(const ParallelTensorShape& shape, const PieceIndex& index);
// The region one piece covers (replicas cover the same region).
Region piece_region(const ParallelTensorShape& shape, const std::vector<int>& block);
Region piece_region(const ParallelTensorShape& shape, int linear);

// Row-major offset of `at` (global coordinates) inside a buffer holding `box`.
std::int64_t offset_in(const Region& box, const std::vector<std::int64_t>& at);
// True when `inner` occupies one contiguous run of a row-major buffer holding `outer`: a view with
// an offset can then stand for it without copying.
bool is_contiguous_within(const Region& outer, const Region& inner);

}  // namespace unity::executor
