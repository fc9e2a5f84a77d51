// Acos: arccos(x), on [-1, 1].
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace acos_function {

double value(double x, const double*) { return std::acos(x); }

double derivative(double x, double, const double*) { return -1.0 / std::sqrt(1.0 - x * x); }

}  // namespace acos_function

UNITY_POINTWISE_OPERATOR(Acos,
                         (PointwiseFunction{
                             acos_function::value, acos_function::derivative, {}, true, false}),
                         (std::vector<std::string_view>{"Acos"}), "arccos(x)")

}  // namespace unity
