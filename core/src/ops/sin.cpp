// Sin: sin(x) (positional encodings computed in the graph).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace sin_function {

double value(double x, const double*) { return std::sin(x); }

double derivative(double x, double, const double*) { return std::cos(x); }

}  // namespace sin_function

UNITY_POINTWISE_OPERATOR(Sin,
                         (PointwiseFunction{
                             sin_function::value, sin_function::derivative, {}, true, false}),
                         (std::vector<std::string_view>{"Sin"}), "sin(x)")

}  // namespace unity
