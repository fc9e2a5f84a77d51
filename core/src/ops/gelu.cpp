// Gelu: x Phi(x) with the exact normal CDF (PyTorch's default GELU).
#include <cmath>
#include <numbers>

#include "pointwise_operator.h"

namespace unity {
namespace gelu_function {

double value(double x, const double*) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

double derivative(double x, double, const double*) {
  const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
  return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) + x * pdf;
}

}  // namespace gelu_function

UNITY_POINTWISE_OPERATOR(
    Gelu,
    (PointwiseFunction{
        gelu_function::value, gelu_function::derivative, {}, true, false, 1, true, 1}),
    (std::vector<std::string_view>{"Gelu"}), "x Phi(x), the exact GELU")

}  // namespace unity
