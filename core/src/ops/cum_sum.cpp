// CumSum: the running sum along the axis (torch.cumsum, ONNX CumSum), inclusive or exclusive (the
// element itself left out), from the start or, reversed, from the end. Position ids from an
// attention mask and the slots of tokens routed to an expert are written with it.
#include "axis_operator.h"

namespace unity {
namespace cum_sum_function {

// y_i = sum of x_j over j <= i (j < i exclusive; j >= i, j > i reversed).
void forward(const double* x, double* y, std::int64_t n, const double* params) {
  const bool exclusive = params[0] != 0, reverse = params[1] != 0;
  double sum = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t i = reverse ? n - 1 - k : k;
    if (!exclusive) sum += x[i];
    y[i] = sum;
    if (exclusive) sum += x[i];
  }
}

// Linear: dx_j = sum of dy_i over the i whose sum holds x_j, the running sum the other way.
void backward(const double*, const double*, const double* dy, double* dx, std::int64_t n,
              const double* params) {
  const double reversed[] = {params[0], params[1] != 0 ? 0.0 : 1.0};
  forward(dy, dx, n, reversed);
}

}  // namespace cum_sum_function

UNITY_AXIS_OPERATOR(CumSum,
                    (AxisFunction{cum_sum_function::forward,
                                  cum_sum_function::backward,
                                  1,
                                  false,
                                  {{"exclusive", 0.0, "exclusive"}, {"reverse", 0.0, "reverse"}},
                                  true}),
                    (std::vector<std::string_view>{"CumSum"}),
                    "running sum along the axis (exclusive, reverse)")

}  // namespace unity
