// Embedding and EmbeddingBag: tables split by rows (each device holds some entries and produces
// partial results, summed by a Reduce: how DLRM tables are sharded) or by embedding columns.
#include "shape_rules.h"

namespace unity::shape_rules {

Shapes infer_embedding(const Operator& op, const Shapes& in) {
  const auto& idx = in[0];
  const auto& w = in[1];
  const bool bag = op.type == OpType::EmbeddingBag;
  expect_integer(idx, "input 0 (indices)");
  expect_rank(w, 2, "input 1 (weight [entries, dim])");
  expect_floating(w, "input 1 (weight)");
  const std::int64_t entries = op.attrs.get_int("num_entries");
  const std::int64_t dim = op.attrs.get_int("embedding_dim");
  expect_positive(entries, "num_entries");
  expect_positive(dim, "embedding_dim");
  expect_size(w, 0, entries, "input 1 (weight [entries, dim])");
  expect_size(w, 1, dim, "input 1 (weight [entries, dim])");
  if (bag) {
    expect_rank(idx, 2, "input 0 (indices [N, bag])");
    expect_degree(idx, 1, 1, "input 0 (indices)", "a bag is aggregated on one device");
    const auto& agg = op.attrs.get_string("aggregate", "sum");
    if (agg != "sum" && agg != "mean")
      fail("attribute 'aggregate' must be \"sum\" or \"mean\", got \"{}\"", agg);
  } else {
    expect_min_rank(idx, 1, "input 0 (indices)");
  }
  const int d_rows = w.dims[0].degree;
  const int d_cols = w.dims[1].degree;
  const int lead = bag ? 1 : idx.rank();
  const int d_sample = degree_product(idx, 0, lead);
  expect_replica(idx, d_rows * d_cols, "input 0 (indices)",
                 "every row and column shard looks up all indices");
  expect_replica(w, d_sample, "input 1 (weight)", "one copy per sample partition");
  ParallelTensorShape y;
  y.dtype = w.dtype;
  for (int d = 0; d < lead; ++d) y.dims.push_back(idx.dims[d]);
  y.dims.push_back({dim, d_cols});
  y.replica = d_rows;
  return {y};
}

}  // namespace unity::shape_rules
