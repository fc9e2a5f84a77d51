#pragma once
// Concrete evaluation of PCG operators on ParallelValues: the reference semantics that fingerprints
// are computed with, that counterexamples are found with, and that the verifier's axioms are tested
// against. Degrees and replica counts come from the core's shape inference, so a value is undefined
// exactly where the core rejects the operator; on top of that an operator is undefined where its
// result would be meaningless (a non-linear operator reading partial sums, a Reduce summing
// copies), the same checks the executor makes before it runs a plan.
#include <string>
#include <vector>

#include "unity/core/pcg/graph.h"
#include "unity/core/pcg/operator.h"
#include "unity/rules/parallel_value.h"

namespace unity::rules {

struct Evaluation {
  std::vector<ParallelValue> outputs;
  std::string error;  // why the result is undefined; empty when defined
  bool ok() const { return error.empty(); }
};

Evaluation evaluate(const Operator& op, const std::vector<const ParallelValue*>& inputs);

// Every node of `graph` in topological order. A node with an entry in `given` takes that value
// instead of being evaluated (every Input and Weight node needs one). Fails with the first
// undefined node.
struct GraphEvaluation {
  std::map<NodeId, std::vector<ParallelValue>> values;
  std::string error;
  bool ok() const { return error.empty(); }
  const ParallelValue& at(TensorRef t) const {
    return values.at(t.node).at(static_cast<std::size_t>(t.index));
  }
};
GraphEvaluation evaluate_graph(const Graph& graph, const std::map<NodeId, ParallelValue>& given);

}  // namespace unity::rules
