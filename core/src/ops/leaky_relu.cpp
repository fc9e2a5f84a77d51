// LeakyRelu: x for x >= 0, alpha x below (torch.nn.LeakyReLU, ONNX LeakyRelu).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace leaky_relu_function {

double value(double x, const double* p) { return x >= 0 ? x : p[0] * x; }

double derivative(double x, double, const double* p) { return x > 0 ? 1.0 : p[0]; }

}  // namespace leaky_relu_function

UNITY_POINTWISE_OPERATOR(LeakyRelu,
                         (PointwiseFunction{leaky_relu_function::value,
                                            leaky_relu_function::derivative,
                                            {{"alpha", 0.01, "alpha"}},
                                            false,
                                            false}),
                         (std::vector<std::string_view>{"LeakyRelu"}), "x, or alpha x below 0")

}  // namespace unity
