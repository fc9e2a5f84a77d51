// Selu: gamma x for x > 0, gamma alpha (exp(x) - 1) below: the self-normalising ELU
// (torch.nn.SELU, ONNX Selu, whose defaults are the constants of Klambauer et al. 2017).
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace selu_function {

double value(double x, const double* p) { return x > 0 ? p[1] * x : p[1] * p[0] * std::expm1(x); }

double derivative(double x, double y, const double* p) { return x > 0 ? p[1] : y + p[1] * p[0]; }

}  // namespace selu_function

UNITY_POINTWISE_OPERATOR(Selu,
                         (PointwiseFunction{selu_function::value,
                                            selu_function::derivative,
                                            {{"alpha", 1.67326319217681884765625, "alpha"},
                                             {"gamma", 1.05070102214813232421875, "gamma"}},
                                            true,
                                            false,
                                            0}),
                         (std::vector<std::string_view>{"Selu"}),
                         "gamma x, or gamma alpha (exp(x) - 1) below 0")

}  // namespace unity
