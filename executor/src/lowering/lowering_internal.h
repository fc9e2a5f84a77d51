#pragma once
// Private to the lowering: per-operator rules for replica layouts and task requests.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "unity/core/shapes/replica_meaning.h"
#include "unity/executor/program.h"

namespace unity::executor::detail {

template <typename... Args>
[[noreturn]] void fail_at(const Graph& g, NodeId node, fmt::format_string<Args...> f,
                          Args&&... args) {
  throw LoweringError(g.describe(node) + ": " + fmt::format(f, std::forward<Args>(args)...));
}

// What task `task` of node `n` (which produces output piece `task`) reads.
std::vector<Request> task_requests(const Graph& g, const Node& n, int task);

// Linear index of a block over some dims of a shape (row-major in the order given).
int block_linear(const ParallelTensorShape& s, const std::vector<int>& block, int begin, int end);

}  // namespace unity::executor::detail
