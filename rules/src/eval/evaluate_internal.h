#pragma once
// Shared by the evaluator's files: one operator evaluated on one micro-batch, with the output shapes
// already inferred by the core.
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "unity/rules/evaluator.h"

namespace unity::rules::detail {

// Thrown inside the evaluator for an undefined result; turned into Evaluation::error.
struct Undefined : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void undefined(fmt::format_string<Args...> f, Args&&... args) {
  throw Undefined(fmt::format(f, std::forward<Args>(args)...));
}

struct OpContext {
  const Operator& op;
  const std::vector<const ParallelValue*>& in;
  const std::vector<ParallelTensorShape>& out_shapes;
  int stage = 0;
  // Replica r of input i in the current micro-batch (inputs with one micro-batch serve every one).
  const DenseTensor& piece(std::size_t i, int r) const {
    const ParallelValue& v = *in[i];
    return v.piece(v.stages == 1 ? 0 : stage, r);
  }
};

// Replica layouts of the outputs, or Undefined when the operator would read replicas meaninglessly.
std::vector<ReplicaLayout> output_layouts(const OpContext& c);
// Every output's replicas for the current micro-batch, in layout order.
std::vector<std::vector<DenseTensor>> compute_replicas(const OpContext& c);

}  // namespace unity::rules::detail
