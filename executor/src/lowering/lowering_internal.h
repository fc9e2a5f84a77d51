#pragma once
// Private to the lowering: per-operator rules for replica layouts and task requests.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "unity/executor/program.h"

namespace unity::executor::detail {

template <typename... Args>
[[noreturn]] void fail_at(const Graph& g, NodeId node, fmt::format_string<Args...> f,
                          Args&&... args) {
  throw LoweringError(g.describe(node) + ": " + fmt::format(f, std::forward<Args>(args)...));
}

// Layouts of the node's outputs given its inputs' layouts; throws LoweringError naming the node
// when the parallelisation is not semantically valid (e.g. a non-linear operator reading partial
// sums).
std::vector<ReplicaLayout> output_layouts(const Graph& g, const Node& n,
                                          const std::vector<ReplicaLayout>& inputs);

// What task `task` of node `n` (which produces output piece `task`) reads.
std::vector<Request> task_requests(const Graph& g, const Node& n, int task);

// For Add/Sub/Mul/Div: product of the output degrees of the dims input `slot` broadcasts along.
int broadcast_degree(const Graph& g, const Node& n, int slot);

// Linear index of a block over some dims of a shape (row-major in the order given).
int block_linear(const ParallelTensorShape& s, const std::vector<int>& block, int begin, int end);

bool is_linear_unary(OpType t);

}  // namespace unity::executor::detail
