// Round: The nearest integer, halves to even as ONNX rounds; gradient 0.
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace round_function {

double value(double x, const double*) { return std::nearbyint(x); }

double derivative(double, double, const double*) { return 0.0; }

}  // namespace round_function

UNITY_POINTWISE_OPERATOR(Round,
                         (PointwiseFunction{
                             round_function::value, round_function::derivative, {}, false, false}),
                         (std::vector<std::string_view>{"Round"}), "round(x), halves to even")

}  // namespace unity
