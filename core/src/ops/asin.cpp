// Asin: arcsin(x), on [-1, 1].
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace asin_function {

double value(double x, const double*) { return std::asin(x); }

double derivative(double x, double, const double*) { return 1.0 / std::sqrt(1.0 - x * x); }

}  // namespace asin_function

UNITY_POINTWISE_OPERATOR(Asin,
                         (PointwiseFunction{
                             asin_function::value, asin_function::derivative, {}, true, false}),
                         (std::vector<std::string_view>{"Asin"}), "arcsin(x)")

}  // namespace unity
