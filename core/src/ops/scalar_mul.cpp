// ScalarMul: scalar x: a Mul by a constant (Neg is scalar -1).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace scalar_mul_function {

double value(double x, const double* p) { return x * p[0]; }

double derivative(double, double, const double* p) { return p[0]; }

}  // namespace scalar_mul_function

UNITY_POINTWISE_OPERATOR(ScalarMul,
                         (PointwiseFunction{scalar_mul_function::value,
                                            scalar_mul_function::derivative,
                                            {{"scalar", std::nullopt}},
                                            false,
                                            true}),
                         (std::vector<std::string_view>{}), "scalar x")

}  // namespace unity
