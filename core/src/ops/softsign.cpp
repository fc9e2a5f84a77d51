// Softsign: x / (1 + |x|) (torch.nn.Softsign, ONNX Softsign).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace softsign_function {

double value(double x, const double*) { return x / (1.0 + std::abs(x)); }

double derivative(double x, double, const double*) {
  const double s = 1.0 + std::abs(x);
  return 1.0 / (s * s);
}

}  // namespace softsign_function

UNITY_POINTWISE_OPERATOR(
    Softsign,
    (PointwiseFunction{softsign_function::value, softsign_function::derivative, {}, false, false}),
    (std::vector<std::string_view>{"Softsign"}), "x / (1 + |x|)")

}  // namespace unity
