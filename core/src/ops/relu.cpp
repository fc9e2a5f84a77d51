// Relu: max(x, 0).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace relu_function {

double value(double x, const double*) { return x > 0 ? x : 0.0; }

double derivative(double x, double, const double*) { return x > 0 ? 1.0 : 0.0; }

}  // namespace relu_function

UNITY_POINTWISE_OPERATOR(Relu,
                         (PointwiseFunction{
                             relu_function::value, relu_function::derivative, {}, false, false}),
                         (std::vector<std::string_view>{"Relu"}), "max(x, 0)")

}  // namespace unity
