// ScalarAdd: x + scalar: an Add of a constant, as the importer folds it.
#include <cmath>

#include "pointwise_operator.h"

namespace unity {
namespace scalar_add_function {

double value(double x, const double* p) { return x + p[0]; }

double derivative(double, double, const double*) { return 1.0; }

}  // namespace scalar_add_function

UNITY_POINTWISE_OPERATOR(ScalarAdd,
                         (PointwiseFunction{scalar_add_function::value,
                                            scalar_add_function::derivative,
                                            {{"scalar", std::nullopt}},
                                            false,
                                            false}),
                         (std::vector<std::string_view>{}), "x + scalar")

}  // namespace unity
