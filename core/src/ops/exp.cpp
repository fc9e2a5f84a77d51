// Exp: exp(x).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace exp_function {

double value(double x, const double*) { return std::exp(x); }

double derivative(double, double y, const double*) { return y; }

}  // namespace exp_function

UNITY_POINTWISE_OPERATOR(Exp,
                         (PointwiseFunction{
                             exp_function::value, exp_function::derivative, {}, true, false, 0}),
                         (std::vector<std::string_view>{"Exp"}), "exp(x)")

}  // namespace unity
