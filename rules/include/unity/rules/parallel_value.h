#pragma once
// The value of one PCG tensor under the semantics the rules are verified against (docs/rules-
// generation.md):
// - data dims may be partitioned: a degree is layout only, every replica is stored as the whole
//   logical tensor;
// - the replicas are copies (made by Replicate/AllReduce) or partial sums (left by a split
// reduction
//   dimension), recorded as mixed-radix factors, outermost first, exactly as the executor numbers
//   them: Replicate(d) appends d copies innermost, Reduce(d) sums the innermost d partial sums;
// - Pipeline(k, d) turns each tensor into d micro-batches processed one after the other ("stages").
// Two values are equal when shape, replica layout, stages and every replica's data agree.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "unity/core/shapes/parallel_tensor_shape.h"
#include "unity/core/shapes/replica_layout.h"
#include "unity/rules/dense_tensor.h"

namespace unity::rules {

// Replica factors, outermost first, adjacent factors of one kind merged, factors of size 1 dropped.
using unity::ReplicaFactor;
using unity::ReplicaLayout;

struct ParallelValue {
  ParallelTensorShape shape;
  ReplicaLayout layout;
  int stages = 1;
  // stages x replica tensors, index stage * replica + r, each of the shape's sizes.
  std::vector<DenseTensor> data;

  const DenseTensor& piece(int stage, int replica) const {
    return data[static_cast<std::size_t>(stage * shape.replica + replica)];
  }
  // A serial value holding `t` (one stage, one replica, every degree 1).
  static ParallelValue serial(DenseTensor t, DataType dtype = DataType::Float32);
  std::string describe() const;  // shape, layout and stages, for messages
};

bool approx_equal(const ParallelValue& a, const ParallelValue& b, double tolerance = 1e-9);

// Hash of everything equality compares, with the data rounded to 30 significant bits so that values
// computed in a different order hash alike. Part of the generator's fingerprints.
std::uint64_t fingerprint(const ParallelValue& v);

// The first place two unequal values differ, in words ("replica 1 element [0, 3]: 0.25 vs 0.5").
std::string describe_difference(const ParallelValue& a, const ParallelValue& b);

}  // namespace unity::rules
