// Hardmax: 1 at the first maximum of the slice along the axis, 0 elsewhere (ONNX Hardmax; before
// opset 13 over the dims from the axis on, as Softmax). Piecewise constant: its gradient is zero.
#include <algorithm>

#include "axis_operator.h"

namespace unity {
namespace hardmax_function {

void forward(const double* x, double* y, std::int64_t n, const double*) {
  std::fill(y, y + n, 0.0);
  if (n > 0) y[std::max_element(x, x + n) - x] = 1.0;  // the first of equal maxima
}

void backward(const double*, const double*, const double*, double* dx, std::int64_t n,
              const double*) {
  std::fill(dx, dx + n, 0.0);
}

}  // namespace hardmax_function

// A comparison per element, and a write.
UNITY_AXIS_OPERATOR(
    Hardmax,
    (AxisFunction{hardmax_function::forward, hardmax_function::backward, 1, false, {}, false}),
    (std::vector<std::string_view>{"Hardmax"}), "one-hot of the first maximum along the axis")

}  // namespace unity
