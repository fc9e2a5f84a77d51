// Floor: The largest integer not above x; gradient 0.
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace floor_function {

double value(double x, const double*) { return std::floor(x); }

double derivative(double, double, const double*) { return 0.0; }

}  // namespace floor_function

UNITY_POINTWISE_OPERATOR(Floor,
                         (PointwiseFunction{
                             floor_function::value, floor_function::derivative, {}, false, false}),
                         (std::vector<std::string_view>{"Floor"}), "floor(x)")

}  // namespace unity
