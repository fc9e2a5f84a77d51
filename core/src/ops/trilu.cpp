// Trilu: the upper or lower triangle of a matrix, the rest zeroed (torch.triu/tril, ONNX Trilu).
// An operator along one axis whose slice is the whole matrix, flattened row by row: `rows` says how
// many rows it has (the ONNX import reshapes [..., H, W] to [..., H * W] with rows = H, and back).
// Upper keeps column - row >= k, lower column - row <= k. The leading (batch) dims split freely;
// the matrix is read whole, since a block of it would not know where it lies.
#include <algorithm>
#include <cmath>

#include "axis_operator.h"

namespace unity {
namespace trilu_function {
namespace {

// A real parameter as a whole number in [lo, hi] (a rule's random instance may hold any real).
std::int64_t whole(double v, std::int64_t lo, std::int64_t hi) {
  if (!(v >= static_cast<double>(lo))) return lo;
  if (!(v <= static_cast<double>(hi))) return hi;
  return static_cast<std::int64_t>(std::llround(v));
}

// params: rows, upper, k. Element t of the slice is at row t / cols, column t % cols.
template <typename Visit>
void for_each_kept(std::int64_t n, const double* params, Visit visit) {
  const std::int64_t rows = whole(params[0], 1, std::max<std::int64_t>(n, 1));
  const std::int64_t cols = (n + rows - 1) / rows;
  const bool upper = params[1] != 0;
  const std::int64_t k = whole(params[2], -n - 1, n + 1);
  for (std::int64_t t = 0; t < n; ++t) {
    const std::int64_t diagonal = t % cols - t / cols;
    if (upper ? diagonal >= k : diagonal <= k) visit(t);
  }
}

}  // namespace

void forward(const double* x, double* y, std::int64_t n, const double* params) {
  std::fill(y, y + n, 0.0);
  for_each_kept(n, params, [&](std::int64_t t) { y[t] = x[t]; });
}

// Linear: the gradient is masked the same way.
void backward(const double*, const double*, const double* dy, double* dx, std::int64_t n,
              const double* params) {
  forward(dy, dx, n, params);
}

}  // namespace trilu_function

// A comparison and a copy per element.
UNITY_AXIS_OPERATOR(Trilu,
                    (AxisFunction{trilu_function::forward,
                                  trilu_function::backward,
                                  1,
                                  false,
                                  {{"rows", 1.0}, {"upper", 1.0}, {"k", 0.0}},
                                  false}),
                    (std::vector<std::string_view>{}),
                    "upper (column - row >= k) or lower triangle of the matrix along the axis, "
                    "flattened in `rows` rows")

}  // namespace unity
