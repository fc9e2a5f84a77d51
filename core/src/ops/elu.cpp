// Elu: x for x > 0, alpha (exp(x) - 1) below (torch.nn.ELU, ONNX Elu).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace elu_function {

double value(double x, const double* p) { return x > 0 ? x : p[0] * std::expm1(x); }

double derivative(double x, double y, const double* p) { return x > 0 ? 1.0 : y + p[0]; }

}  // namespace elu_function

UNITY_POINTWISE_OPERATOR(
    Elu,
    (PointwiseFunction{
        elu_function::value, elu_function::derivative, {{"alpha", 1.0, "alpha"}}, true, false, 0}),
    (std::vector<std::string_view>{"Elu"}), "x, or alpha (exp(x) - 1) below 0")

}  // namespace unity
