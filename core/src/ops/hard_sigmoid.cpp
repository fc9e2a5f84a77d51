// HardSigmoid: max(0, min(1, alpha x + beta)) (ONNX HardSigmoid; PyTorch exports
// torch.nn.Hardsigmoid with alpha 1/6).
#include <algorithm>
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace hard_sigmoid_function {

double value(double x, const double* p) { return std::clamp(p[0] * x + p[1], 0.0, 1.0); }

double derivative(double x, double, const double* p) {
  const double z = p[0] * x + p[1];
  return z > 0 && z < 1 ? p[0] : 0.0;
}

}  // namespace hard_sigmoid_function

UNITY_POINTWISE_OPERATOR(HardSigmoid,
                         (PointwiseFunction{hard_sigmoid_function::value,
                                            hard_sigmoid_function::derivative,
                                            {{"alpha", 0.2, "alpha"}, {"beta", 0.5, "beta"}},
                                            false,
                                            false}),
                         (std::vector<std::string_view>{"HardSigmoid"}),
                         "max(0, min(1, alpha x + beta))")

}  // namespace unity
