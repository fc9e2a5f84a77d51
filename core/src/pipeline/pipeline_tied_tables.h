#pragma once
// Tied tables in a pipeline (tied_weights.h: a head that reads the token embedding's table): where
// one rank holds both readers the table is one tensor there; where two ranks do, each keeps a copy
// and their gradients are all-reduced between the two after the backward pass (Megatron-LM's
// embedding group).
#include <functional>
#include <utility>
#include <vector>

#include "unity/core/pcg/graph.h"
#include "unity/core/pipeline/layer_segments.h"

namespace unity::pipeline_layouts {

class PipelineTiedTables {
 public:
  PipelineTiedTables(const Graph& model, const SegmentChain& chain);

  // Elements of every tied table's copies.
  double elements() const { return elements_; }

  // With chunk c (of `parts`, first and last segment each) on rank c % pp and `tp` devices a
  // replica: takes each table held by one rank once out of that rank's `rank_params`, and returns
  // the slowest all-reduce of two ranks' copies' gradients, `allreduce(rank_a, rank_b, bytes)`
  // seconds, of `gradient_bytes` an element.
  double tie(const std::vector<std::pair<int, int>>& parts, int pp, int tp, double gradient_bytes,
             std::vector<double>& rank_params,
             const std::function<double(int, int, double)>& allreduce) const;

 private:
  // A tied weight and its partner: the segments that read them, and the table's elements.
  struct Pair {
    int segment = 0, partner_segment = 0;
    double elements = 0;
  };
  std::vector<Pair> pairs_;
  int segments_ = 0;
  double elements_ = 0;
};

}  // namespace unity::pipeline_layouts
