// Celu: max(0, x) + min(0, alpha (exp(x / alpha) - 1)) (torch.nn.CELU, ONNX Celu).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace celu_function {

double value(double x, const double* p) { return x > 0 ? x : p[0] * std::expm1(x / p[0]); }

double derivative(double x, double, const double* p) { return x > 0 ? 1.0 : std::exp(x / p[0]); }

}  // namespace celu_function

UNITY_POINTWISE_OPERATOR(
    Celu,
    (PointwiseFunction{
        celu_function::value, celu_function::derivative, {{"alpha", 1.0, "alpha"}}, true, false}),
    (std::vector<std::string_view>{"Celu"}), "x, or alpha (exp(x / alpha) - 1) below 0")

}  // namespace unity
