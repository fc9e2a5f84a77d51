// Sign: The sign of x (-1, 0 or 1); its gradient is 0 (straight-through estimators write their
// own).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace sign_function {

double value(double x, const double*) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }

double derivative(double, double, const double*) { return 0.0; }

}  // namespace sign_function

UNITY_POINTWISE_OPERATOR(Sign,
                         (PointwiseFunction{
                             sign_function::value, sign_function::derivative, {}, false, false}),
                         (std::vector<std::string_view>{"Sign"}), "sign(x)")

}  // namespace unity
