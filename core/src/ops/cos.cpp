// Cos: cos(x).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace cos_function {

double value(double x, const double*) { return std::cos(x); }

double derivative(double x, double, const double*) { return -std::sin(x); }

}  // namespace cos_function

UNITY_POINTWISE_OPERATOR(Cos,
                         (PointwiseFunction{
                             cos_function::value, cos_function::derivative, {}, true, false}),
                         (std::vector<std::string_view>{"Cos"}), "cos(x)")

}  // namespace unity
