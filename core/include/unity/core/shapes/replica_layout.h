#pragma once
// What the replicas of a tensor mean. A ParallelTensorShape only counts replicas; executing a plan
// needs to know which of them are copies (made by Replicate or AllReduce: equal values, their
// gradients are summed) and which are partial sums (left by a split reduction dimension: the value
// is their sum, each receives the whole gradient). The replica index is mixed-radix over the
// factors, outermost first; Replicate appends a copy factor innermost and Reduce(k) sums the
// innermost k replicas, matching how the cost model groups them (docs/cost-model.md). The executor
// runs plans with it and the rule verifier's concrete semantics evaluates rules with it.
#include <optional>
#include <string>
#include <vector>

namespace unity {

struct ReplicaFactor {
  int size = 1;
  bool partial = false;
  bool operator==(const ReplicaFactor&) const = default;
};

class ReplicaLayout {
 public:
  ReplicaLayout() = default;
  static ReplicaLayout copies(int n);
  static ReplicaLayout partials(int n);

  int size() const;  // number of replicas
  bool has_partial() const;
  const std::vector<ReplicaFactor>& factors() const { return factors_; }

  // Appends a factor innermost (merging with an innermost factor of the same kind).
  ReplicaLayout with_inner(ReplicaFactor f) const;
  ReplicaLayout with_outer(ReplicaFactor f) const;
  // Splits off the innermost `k` replicas: the layout of the outer part and of the inner group.
  // nullopt when k does not fall on a factor boundary and cannot split one (k must divide it).
  std::optional<std::pair<ReplicaLayout, ReplicaLayout>> split_inner(int k) const;

  // Index of replica r among the partial sums (mixed radix over the partial factors only), and
  // among the copies. Two replicas with equal partial_key hold equal values.
  int partial_key(int r) const;
  int copy_key(int r) const;
  int partial_count() const;

  std::string to_string() const;  // "2 partial x 2 copies"
  bool operator==(const ReplicaLayout&) const = default;

 private:
  std::vector<ReplicaFactor> factors_;  // outermost first, adjacent factors of one kind merged
};

}  // namespace unity
