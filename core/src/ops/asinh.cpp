// Asinh: arsinh(x).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace asinh_function {

double value(double x, const double*) { return std::asinh(x); }

double derivative(double x, double, const double*) { return 1.0 / std::sqrt(x * x + 1.0); }

}  // namespace asinh_function

UNITY_POINTWISE_OPERATOR(Asinh,
                         (PointwiseFunction{
                             asinh_function::value, asinh_function::derivative, {}, true, false}),
                         (std::vector<std::string_view>{"Asinh"}), "arsinh(x)")

}  // namespace unity
