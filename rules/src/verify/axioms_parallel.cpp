// Properties of the parallel operators among themselves (paper 3.3): degree 1 is the identity,
// negative dims count from the end, Combine undoes Partition and Batch undoes Pipeline, splits of one
// dim compose, operators on different dims or on the replica dim commute, and AllReduce is a Reduce
// followed by a Replicate.
#include <functional>

#include "theory.h"

namespace unity::rules::spec {
namespace {

using A = Axiom;
using M = Axiom::Mode;
using DimOp = std::function<E(const E&, const E&, const E&)>;

struct Named {
  std::string name;
  DimOp make;
};

}  // namespace

void add_parallel_axioms(Theory& th) {
  auto add = [&](std::string name, M mode, E lhs, E rhs, E guard = E()) {
    th.axioms.push_back({std::move(name), mode, std::move(lhs), std::move(rhs), std::move(guard), E()});
  };
  auto trigger = [&](std::string name, E trig, E lhs, E rhs) {
    th.axioms.push_back({std::move(name), M::Trigger, std::move(lhs), std::move(rhs), E(), std::move(trig)});
  };
  const E x = tvar("x"), k = ivar("k"), k1 = ivar("k1"), k2 = ivar("k2"), d = ivar("d"), d1 = ivar("d1"),
          d2 = ivar("d2");
  const std::vector<Named> dim_ops = {{"partition", P}, {"combine", C}, {"pipeline", Pipe}, {"batch", Bat}};
  const std::vector<std::pair<std::string, std::function<E(const E&, const E&)>>> rep_ops = {
      {"replicate", R}, {"reduce", Red}, {"allreduce", AR}};

  for (const auto& [name, f] : dim_ops) {
    add(name + "_degree_one", M::Forward, f(k, d, x), x, d == 1);
    add(name + "_negative_dim", M::Forward, f(k, d, x), f(k + rank(x), d, x), k < 0);
  }
  for (const auto& [name, f] : rep_ops) add(name + "_degree_one", M::Forward, f(d, x), x, d == 1);

  // The two dims are one (written alike or not: -1 and rank-1, or an expression).
  const E same = norm(k1, rank(x)) == norm(k2, rank(x));
  add("combine_partition", M::Forward, C(k1, d, P(k2, d, x)), x, same);
  add("partition_combine", M::Forward, P(k1, d, C(k2, d, x)), x, same);
  add("batch_pipeline", M::Forward, Bat(k1, d, Pipe(k2, d, x)), x, same);
  add("pipeline_batch", M::Forward, Pipe(k1, d, Bat(k2, d, x)), x, same);
  // Every partitioned tensor is the partition of its combination and vice versa: lets a proof see a
  // Partition (or Combine) wherever the axioms of the compute operators need one.
  trigger("partition_inverse", P(k, d, x), C(k, d, P(k, d, x)), x);
  trigger("combine_inverse", C(k, d, x), P(k, d, C(k, d, x)), x);

  add("allreduce_is_reduce_replicate", M::Both, AR(d, x), R(d, Red(d, x)));

  add("partition_partition_merge", M::Forward, P(k1, d1, P(k2, d2, x)), P(k2, d1 * d2, x), same);
  add("combine_combine_merge", M::Forward, C(k1, d1, C(k2, d2, x)), C(k2, d1 * d2, x), same);
  add("pipeline_pipeline_merge", M::Forward, Pipe(k1, d1, Pipe(k2, d2, x)), Pipe(k2, d2 * d1, x), same);
  add("batch_batch_merge", M::Forward, Bat(k1, d1, Bat(k2, d2, x)), Bat(k2, d1 * d2, x), same);
  add("replicate_replicate_merge", M::Forward, R(d1, R(d2, x)), R(d1 * d2, x));
  add("reduce_reduce_merge", M::Forward, Red(d1, Red(d2, x)), Red(d1 * d2, x));

  // Operators on different dims commute, except two changes of the micro-batch order (Pipeline and
  // Batch on different dims number the micro-batches differently).
  const E different = ilit(0) <= k1 && ilit(0) <= k2 && k1 != k2;
  auto temporal = [](const std::string& n) { return n == "pipeline" || n == "batch"; };
  for (const auto& [fn, f] : dim_ops)
    for (const auto& [gn, g] : dim_ops) {
      if (fn > gn || (temporal(fn) && temporal(gn))) continue;  // Both covers the other order
      add(fn + "_" + gn + "_commute", M::Both, f(k1, d1, g(k2, d2, x)), g(k2, d2, f(k1, d1, x)), different);
      if (fn != gn)
        add(gn + "_" + fn + "_commute", M::Both, g(k1, d1, f(k2, d2, x)), f(k2, d2, g(k1, d1, x)), different);
    }
  // Micro-batches split a dim's data, a Partition its layout: on one dim they commute too (a Batch
  // after a Partition may be defined where the Partition before it is not: one way only).
  add("pipeline_partition_same_dim", M::Both, Pipe(k, d1, P(k, d2, x)), P(k, d2, Pipe(k, d1, x)));
  add("combine_pipeline_same_dim", M::Forward, C(k, d2, Pipe(k, d1, x)), Pipe(k, d1, C(k, d2, x)));
  add("batch_partition_same_dim", M::Forward, Bat(k, d1, P(k, d2, x)), P(k, d2, Bat(k, d1, x)));
  add("batch_combine_same_dim", M::Both, Bat(k, d1, C(k, d2, x)), C(k, d2, Bat(k, d1, x)));
  // The replica dimension is independent of the data dims.
  for (const auto& [rn, r] : rep_ops)
    for (const auto& [fn, f] : dim_ops)
      add(rn + "_" + fn + "_commute", M::Both, r(d1, f(k, d2, x)), f(k, d2, r(d1, x)));
}

}  // namespace unity::rules::spec
