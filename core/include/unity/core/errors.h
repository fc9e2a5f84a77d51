#pragma once
// Error types of the core. The CLI maps InputError/ShapeError/GraphError to exit code 1 (bad input)
// and anything else to exit code 2 (internal error).
#include <stdexcept>
#include <string>

namespace unity {

// Something the user gave us is wrong: a file, a flag, a model. The message names the problem.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Shape inference rejected an operator's inputs (sizes, ranks, or parallel degrees).
struct ShapeError : InputError {
  using InputError::InputError;
};

// A parallelisation whose degrees fit but whose meaning does not: an operator that is not linear
// reading partial sums, a Reduce summing copies (replica_meaning.h).
struct ReplicaMeaningError : ShapeError {
  using ShapeError::ShapeError;
};

// A graph is malformed: dangling inputs, cycles, wrong arity, inconsistent stored shapes.
struct GraphError : InputError {
  using InputError::InputError;
};

}  // namespace unity
