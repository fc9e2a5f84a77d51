// Pow: x to a constant power (Reciprocal is power -1).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace pow_function {

double value(double x, const double* p) { return std::pow(x, p[0]); }

double derivative(double x, double, const double* p) { return p[0] * std::pow(x, p[0] - 1.0); }

}  // namespace pow_function

UNITY_POINTWISE_OPERATOR(
    Pow,
    (PointwiseFunction{
        pow_function::value, pow_function::derivative, {{"scalar", std::nullopt}}, false, false}),
    (std::vector<std::string_view>{}), "x ^ scalar")

}  // namespace unity
