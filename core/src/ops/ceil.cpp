// Ceil: The smallest integer not below x; gradient 0.
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace ceil_function {

double value(double x, const double*) { return std::ceil(x); }

double derivative(double, double, const double*) { return 0.0; }

}  // namespace ceil_function

UNITY_POINTWISE_OPERATOR(Ceil,
                         (PointwiseFunction{
                             ceil_function::value, ceil_function::derivative, {}, false, false}),
                         (std::vector<std::string_view>{"Ceil"}), "ceil(x)")

}  // namespace unity
