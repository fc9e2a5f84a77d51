// Identity: x: what remains of an operator the importer removed, and a place a rule can name.
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace identity_function {

double value(double x, const double*) { return x; }

double derivative(double, double, const double*) { return 1.0; }

}  // namespace identity_function

UNITY_POINTWISE_OPERATOR(
    Identity,
    (PointwiseFunction{identity_function::value, identity_function::derivative, {}, false, true}),
    (std::vector<std::string_view>{}), "x")

}  // namespace unity
