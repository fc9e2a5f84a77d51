#pragma once
// A tensor in the PCG (paper 3.1): every data dimension has a size and a degree (how many equal
// pieces it is partitioned into), and the tensor has a replica degree (how many copies of each
// piece exist, or how many partial sums await a Reduce).
#include <cstdint>
#include <string>
#include <vector>

#include "unity/core/pcg/data_type.h"

namespace unity {

struct ParallelDim {
  std::int64_t size = 1;
  int degree = 1;
  bool operator==(const ParallelDim&) const = default;
};

struct ParallelTensorShape {
  std::vector<ParallelDim> dims;
  int replica = 1;
  DataType dtype = DataType::Float32;

  // A shape with every degree 1 (what a model has before it is parallelised).
  static ParallelTensorShape serial(const std::vector<std::int64_t>& sizes,
                                    DataType dtype = DataType::Float32);

  int rank() const { return static_cast<int>(dims.size()); }
  std::vector<std::int64_t> sizes() const;
  std::vector<int> degrees() const;
  std::int64_t num_elements() const;    // the whole logical tensor
  std::int64_t piece_elements() const;  // one piece: each dim's size / degree
  std::int64_t bytes() const { return num_elements() * size_of(dtype); }
  std::int64_t piece_bytes() const { return piece_elements() * size_of(dtype); }
  // Number of pieces: product of all degrees times the replica degree.
  std::int64_t num_pieces() const;
  bool is_serial() const;
  // Dimension index with Python-style negative indexing; throws ShapeError when out of range.
  int axis(int index) const;
  // "[64/2, 784] r2 float32": size/degree where degree > 1, replica when > 1.
  std::string to_string() const;

  bool operator==(const ParallelTensorShape&) const = default;
};

}  // namespace unity
