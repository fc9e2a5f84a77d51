// Sinh: sinh(x).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace sinh_function {

double value(double x, const double*) { return std::sinh(x); }

double derivative(double x, double, const double*) { return std::cosh(x); }

}  // namespace sinh_function

UNITY_POINTWISE_OPERATOR(Sinh,
                         (PointwiseFunction{
                             sinh_function::value, sinh_function::derivative, {}, true, false}),
                         (std::vector<std::string_view>{"Sinh"}), "sinh(x)")

}  // namespace unity
