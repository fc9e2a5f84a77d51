// Atan: arctan(x).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace atan_function {

double value(double x, const double*) { return std::atan(x); }

double derivative(double x, double, const double*) { return 1.0 / (1.0 + x * x); }

}  // namespace atan_function

UNITY_POINTWISE_OPERATOR(Atan,
                         (PointwiseFunction{
                             atan_function::value, atan_function::derivative, {}, true, false}),
                         (std::vector<std::string_view>{"Atan"}), "arctan(x)")

}  // namespace unity
