// Tanh: tanh(x).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace tanh_function {

double value(double x, const double*) { return std::tanh(x); }

double derivative(double, double y, const double*) { return 1.0 - y * y; }

}  // namespace tanh_function

UNITY_POINTWISE_OPERATOR(Tanh,
                         (PointwiseFunction{
                             tanh_function::value, tanh_function::derivative, {}, true, false, 0}),
                         (std::vector<std::string_view>{"Tanh"}), "tanh(x)")

}  // namespace unity
