// Tan: tan(x).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace tan_function {

double value(double x, const double*) { return std::tan(x); }

double derivative(double, double y, const double*) { return 1.0 + y * y; }

}  // namespace tan_function

UNITY_POINTWISE_OPERATOR(Tan,
                         (PointwiseFunction{
                             tan_function::value, tan_function::derivative, {}, true, false}),
                         (std::vector<std::string_view>{"Tan"}), "tan(x)")

}  // namespace unity
