// HardSwish: x max(0, min(1, x / 6 + 1/2)) (MobileNetV3; torch.nn.Hardswish, ONNX HardSwish).
#include <algorithm>
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace hard_swish_function {

double value(double x, const double*) { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); }

double derivative(double x, double, const double*) {
  if (x <= -3.0) return 0.0;
  if (x >= 3.0) return 1.0;
  return x / 3.0 + 0.5;
}

}  // namespace hard_swish_function

UNITY_POINTWISE_OPERATOR(
    HardSwish,
    (PointwiseFunction{
        hard_swish_function::value, hard_swish_function::derivative, {}, false, false}),
    (std::vector<std::string_view>{"HardSwish"}), "x max(0, min(1, x / 6 + 1/2))")

}  // namespace unity
