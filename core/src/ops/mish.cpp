// Mish: x tanh(softplus(x)) (Misra 2019; torch.nn.Mish, ONNX Mish).
#include <algorithm>
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace mish_function {

double value(double x, const double*) {
  return x * std::tanh(std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x))));
}

double derivative(double x, double, const double*) {
  const double t = std::tanh(std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x))));
  const double sigmoid = 1.0 / (1.0 + std::exp(-x));
  return t + x * (1.0 - t * t) * sigmoid;
}

}  // namespace mish_function

UNITY_POINTWISE_OPERATOR(Mish,
                         (PointwiseFunction{
                             mish_function::value, mish_function::derivative, {}, true, false}),
                         (std::vector<std::string_view>{"Mish"}), "x tanh(log(1 + exp(x)))")

}  // namespace unity
