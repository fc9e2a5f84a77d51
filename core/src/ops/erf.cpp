// Erf: The error function.
#include <cmath>
#include <numbers>

#include "pointwise_operator.h"

namespace unity {
namespace erf_function {

double value(double x, const double*) { return std::erf(x); }

double derivative(double x, double, const double*) {
  return 2.0 / std::sqrt(std::numbers::pi) * std::exp(-x * x);
}

}  // namespace erf_function

UNITY_POINTWISE_OPERATOR(
    Erf,
    (PointwiseFunction{erf_function::value, erf_function::derivative, {}, true, false, 1, true, 0}),
    (std::vector<std::string_view>{"Erf"}), "erf(x)")

}  // namespace unity
