// Shrink: x - bias above lambd, x + bias below -lambd, 0 between (ONNX Shrink: torch.nn.Hardshrink
// and Softshrink).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace shrink_function {

double value(double x, const double* p) { return x < -p[0] ? x + p[1] : x > p[0] ? x - p[1] : 0.0; }

double derivative(double x, double, const double* p) { return x < -p[0] || x > p[0] ? 1.0 : 0.0; }

}  // namespace shrink_function

UNITY_POINTWISE_OPERATOR(Shrink,
                         (PointwiseFunction{shrink_function::value,
                                            shrink_function::derivative,
                                            {{"lambd", 0.5, "lambd"}, {"bias", 0.0, "bias"}},
                                            false,
                                            false}),
                         (std::vector<std::string_view>{"Shrink"}),
                         "x -+ bias outside [-lambd, lambd], else 0")

}  // namespace unity
