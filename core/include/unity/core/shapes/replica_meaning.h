#pragma once
// Which replicas are copies and which are partial sums, operator by operator (replica_layout.h).
// Shape inference checks degrees; this checks meaning: an operator that is not linear must not
// read partial sums, a Reduce must sum partial results (summing copies would scale the value), and
// operators that consume a replica dimension (a Linear's input copies, one per output-channel task)
// must be given copies. The executor lowers plans with it; the search refuses a rewrite that
// changes what a tensor's replicas mean (two rules each sound alone can otherwise end in a bias
// summed once per replica).
#include <map>
#include <vector>

#include "unity/core/pcg/graph.h"
#include "unity/core/shapes/replica_layout.h"

namespace unity {

// The layouts of node `n`'s outputs given its inputs' layouts; throws ReplicaMeaningError naming
// the node when the parallelisation does not mean what its serial form does.
std::vector<ReplicaLayout> replica_output_layouts(const Graph& g, const Node& n,
                                                  const std::vector<ReplicaLayout>& inputs);

// The layout of tensor `t`, derived from its producers (those with replicas only), remembered in
// `known`. Throws ReplicaMeaningError as replica_output_layouts does.
ReplicaLayout replica_layout_of(const Graph& g, TensorRef t,
                                std::map<TensorRef, ReplicaLayout>& known);

// For Add/Sub/Mul/Div and the other broadcast operators: the product of the output degrees of the
// dims input `slot` is broadcast along.
int broadcast_degree(const Graph& g, const Node& n, int slot);

// A unary operator linear in its input (a scale, a negation, Dropout's mask): it may read partial
// sums.
bool is_linear_unary(OpType t);

}  // namespace unity
