// ThresholdedRelu: x above alpha, 0 elsewhere (ONNX ThresholdedRelu, torch.nn.Threshold with value
// 0).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace thresholded_relu_function {

double value(double x, const double* p) { return x > p[0] ? x : 0.0; }

double derivative(double x, double, const double* p) { return x > p[0] ? 1.0 : 0.0; }

}  // namespace thresholded_relu_function

UNITY_POINTWISE_OPERATOR(ThresholdedRelu,
                         (PointwiseFunction{thresholded_relu_function::value,
                                            thresholded_relu_function::derivative,
                                            {{"alpha", 1.0, "alpha"}},
                                            false,
                                            false}),
                         (std::vector<std::string_view>{"ThresholdedRelu"}),
                         "x above alpha, else 0")

}  // namespace unity
