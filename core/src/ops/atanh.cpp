// Atanh: artanh(x), on (-1, 1).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace atanh_function {

double value(double x, const double*) { return std::atanh(x); }

double derivative(double x, double, const double*) { return 1.0 / (1.0 - x * x); }

}  // namespace atanh_function

UNITY_POINTWISE_OPERATOR(Atanh,
                         (PointwiseFunction{
                             atanh_function::value, atanh_function::derivative, {}, true, false}),
                         (std::vector<std::string_view>{"Atanh"}), "artanh(x)")

}  // namespace unity
