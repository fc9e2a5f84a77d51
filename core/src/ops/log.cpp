// Log: The natural logarithm; NaN below 0 and -inf at 0, as ONNX gives.
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace log_function {

double value(double x, const double*) { return std::log(x); }

double derivative(double x, double, const double*) { return 1.0 / x; }

}  // namespace log_function

UNITY_POINTWISE_OPERATOR(Log,
                         (PointwiseFunction{
                             log_function::value, log_function::derivative, {}, true, false, 0}),
                         (std::vector<std::string_view>{"Log"}), "log(x)")

}  // namespace unity
