// Softplus: log(1 + exp(x)), written so that large |x| neither overflows nor loses digits.
#include <algorithm>
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace softplus_function {

double value(double x, const double*) {
  return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));
}

double derivative(double x, double, const double*) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace softplus_function

UNITY_POINTWISE_OPERATOR(
    Softplus,
    (PointwiseFunction{softplus_function::value, softplus_function::derivative, {}, true, false}),
    (std::vector<std::string_view>{"Softplus"}), "log(1 + exp(x))")

}  // namespace unity
