// LogSoftmax: x - log(sum exp(x)) along the axis (torch.nn.LogSoftmax, ONNX LogSoftmax), written
// with the slice's maximum taken out first, so that large logits neither overflow nor lose digits.
#include <algorithm>
#include <cmath>

#include "axis_operator.h"

namespace unity {
namespace log_softmax_function {

void forward(const double* x, double* y, std::int64_t n, const double*) {
  const double m = *std::max_element(x, x + n);
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - m);
  const double lse = m + std::log(sum);
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] - lse;
}

// dx_i = dy_i - softmax_i sum_j dy_j, with softmax = exp(y).
void backward(const double*, const double* y, const double* dy, double* dx, std::int64_t n,
              const double*) {
  double total = 0;
  for (std::int64_t i = 0; i < n; ++i) total += dy[i];
  for (std::int64_t i = 0; i < n; ++i) dx[i] = dy[i] - std::exp(y[i]) * total;
}

}  // namespace log_softmax_function

// A max, an exp and an add, a log, and a subtraction per element, as Softmax is counted.
UNITY_AXIS_OPERATOR(
    LogSoftmax,
    (AxisFunction{
        log_softmax_function::forward, log_softmax_function::backward, 8, true, {}, false}),
    (std::vector<std::string_view>{"LogSoftmax"}), "x - log(sum(exp(x))) along the axis")

}  // namespace unity
