#pragma once
// Random concrete instances of spec terms: values for tensor variables shaped for the operator that
// first reads them (a Linear's x and w agree on the reduction size, a Conv2D's weight on the channels),
// sometimes already partitioned or replicated, and attribute variables chosen from the inputs they
// apply to (a Combine's degree divides the dim's degree, a Linear's out_features is its weight's
// width). Used to test the axioms and to look for counterexamples to rules.
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "spec_eval.h"

namespace unity::rules::spec {

class RandomInstances {
 public:
  explicit RandomInstances(std::uint64_t seed) : rng_(seed) {}

  // Values for every tensor variable of `terms` (an environment to evaluate them in).
  std::map<std::string, Concrete> tensors_for(const std::vector<ExprPtr>& terms);
  // Binds attribute and integer variables as evaluation meets them.
  Binder binder();

  // A value of `shape` with random data (integers in [0, max_index) for integer types), its replicas
  // copies, or partial sums when `partial`.
  ParallelValue random_value(const ParallelTensorShape& shape, bool partial = false,
                             std::int64_t max_index = 4);
  std::mt19937_64& rng() { return rng_; }

  // Serial shapes for the tensor inputs of one application of `op` with `arity` inputs, consistent
  // with each other; `rank_hint` (> 0) fixes the first input's rank when known.
  std::vector<ParallelTensorShape> shapes_for(OpType op, int arity, int rank_hint = 0);

 private:
  int pick(const std::vector<int>& options);
  std::int64_t pick_size();
  std::optional<Concrete> bind_attribute(const Expr& var, OpType op, int slot,
                                         const std::vector<const ParallelValue*>& inputs,
                                         const Attributes& earlier);

  std::mt19937_64 rng_;
};

// A random parallelisation of a serial value: some dim partitioned, replicas added.
ParallelValue parallelise_randomly(ParallelValue v, std::mt19937_64& rng, RandomInstances& gen);

}  // namespace unity::rules::spec
