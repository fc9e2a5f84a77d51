// Resize: the listed axes take their new sizes and, where the size changes, must be whole (a piece
// of a resized axis would need the neighbours of its edge rows: a halo this shape does not model);
// every other dim keeps its size and degree, and the replicas pass through (Resize is linear:
// partial sums stay partial).
#include "shape_rules.h"
#include "unity/core/ops/resize.h"

namespace unity::shape_rules {

Shapes infer_resize(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  expect_floating(x, "input 0 (x)");
  const ResizeSpec spec = resize_spec(op, x.rank());
  ParallelTensorShape y = x;
  for (std::size_t i = 0; i < spec.axes.size(); ++i) {
    const int a = spec.axes[i];
    // Resized to its own size, an axis is the identity (every mode maps index i to i): it may be
    // split like the dims not listed.
    if (spec.sizes[i] != x.dims[a].size)
      expect_degree(x, a, 1, "input 0 (x)", "a resized dim must be whole");
    y.dims[a].size = spec.sizes[i];
  }
  return {y};
}

}  // namespace unity::shape_rules
