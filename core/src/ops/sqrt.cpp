// Sqrt: sqrt(x); NaN below 0, as ONNX and PyTorch give.
#include <cmath>
#include <limits>

#include "pointwise_operator.h"

namespace unity {
namespace sqrt_function {

double value(double x, const double*) {
  return x < 0 ? std::numeric_limits<double>::quiet_NaN() : std::sqrt(x);
}

double derivative(double, double y, const double*) { return 0.5 / y; }

}  // namespace sqrt_function

UNITY_POINTWISE_OPERATOR(Sqrt,
                         (PointwiseFunction{
                             sqrt_function::value, sqrt_function::derivative, {}, false, false}),
                         (std::vector<std::string_view>{"Sqrt"}), "sqrt(x)")

}  // namespace unity
