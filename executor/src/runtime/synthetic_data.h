#pragma once
// Deterministic data for training runs: every value is a hash of (seed, tensor name, global element
// index), so a rank can produce exactly the slice it needs without communication, and every
// partitioning of a plan (and the one-rank reference) sees the same numbers.
#include <cstdint>
#include <string>
#include <vector>

#include "unity/core/pcg/graph.h"
#include "unity/executor/region.h"

namespace unity::executor::detail {

struct SourceRole {
  enum class Kind { Uniform, Constant, Integer } kind = Kind::Uniform;
  double low = -1, high = 1;  // Uniform
  double value = 0;           // Constant
  std::int64_t range = 2;     // Integer: values in [0, range)
  std::uint64_t key = 0;      // hash of the source's name
};

// How an Input or Weight is filled, from what reads it: Linear/Conv weights uniform in
// +-1/sqrt(fan_in), BatchNorm/LayerNorm scales 1 and shifts 0, embedding tables +-1/sqrt(rows),
// class labels in [0, classes), embedding indices in [0, rows), regression targets in [0, 1),
// other inputs in [-1, 1).
SourceRole source_role(const Graph& g, NodeId source, std::uint64_t seed);

// Values of `region` (row-major) of a source with global sizes `sizes`.
std::vector<float> synthetic_floats(const SourceRole& role, const std::vector<std::int64_t>& sizes,
                                    const Region& region);
std::vector<std::int64_t> synthetic_integers(const SourceRole& role,
                                             const std::vector<std::int64_t>& sizes,
                                             const Region& region);

std::uint64_t hash_string(const std::string& s);
std::uint64_t hash_combine(std::uint64_t a, std::uint64_t b);

}  // namespace unity::executor::detail
