// Cosh: cosh(x).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace cosh_function {

double value(double x, const double*) { return std::cosh(x); }

double derivative(double x, double, const double*) { return std::sinh(x); }

}  // namespace cosh_function

UNITY_POINTWISE_OPERATOR(Cosh,
                         (PointwiseFunction{
                             cosh_function::value, cosh_function::derivative, {}, true, false}),
                         (std::vector<std::string_view>{"Cosh"}), "cosh(x)")

}  // namespace unity
