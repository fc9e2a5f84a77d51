#pragma once
// A parallel tensor shape written out in a test: S({{size, degree}, ...}, replica, dtype).
#include <cstdint>
#include <utility>
#include <vector>

#include "unity/core/shapes/parallel_tensor_shape.h"

namespace unity::test_shapes {

inline ParallelTensorShape S(std::vector<std::pair<std::int64_t, int>> dims, int replica = 1,
                             DataType dtype = DataType::Float32) {
  ParallelTensorShape s;
  for (auto [size, degree] : dims) s.dims.push_back({size, degree});
  s.replica = replica;
  s.dtype = dtype;
  return s;
}

}  // namespace unity::test_shapes
