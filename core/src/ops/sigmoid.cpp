// Sigmoid: 1 / (1 + exp(-x)).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace sigmoid_function {

double value(double x, const double*) { return 1.0 / (1.0 + std::exp(-x)); }

double derivative(double, double y, const double*) { return y * (1.0 - y); }

}  // namespace sigmoid_function

UNITY_POINTWISE_OPERATOR(
    Sigmoid,
    (PointwiseFunction{sigmoid_function::value, sigmoid_function::derivative, {}, true, false, 0}),
    (std::vector<std::string_view>{"Sigmoid"}), "1 / (1 + exp(-x))")

}  // namespace unity
