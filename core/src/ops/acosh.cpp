// Acosh: arcosh(x), from 1 up.
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace acosh_function {

double value(double x, const double*) { return std::acosh(x); }

double derivative(double x, double, const double*) { return 1.0 / std::sqrt(x * x - 1.0); }

}  // namespace acosh_function

UNITY_POINTWISE_OPERATOR(Acosh,
                         (PointwiseFunction{
                             acosh_function::value, acosh_function::derivative, {}, true, false}),
                         (std::vector<std::string_view>{"Acosh"}), "arcosh(x)")

}  // namespace unity
