// Abs: |x| (an L1 loss, ONNX Abs).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace abs_function {

double value(double x, const double*) { return std::abs(x); }

double derivative(double x, double, const double*) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }

}  // namespace abs_function

UNITY_POINTWISE_OPERATOR(Abs,
                         (PointwiseFunction{
                             abs_function::value, abs_function::derivative, {}, false, false}),
                         (std::vector<std::string_view>{"Abs"}), "|x|")

}  // namespace unity
