// LRN: local response normalisation across channels (AlexNet, GoogLeNet; torch.nn.
// LocalResponseNorm, ONNX LRN), an operator along the channel axis: each channel is divided by
// (bias + alpha / size * the sum of squares of the `size` channels around it)^beta. The window
// of channel c runs from c - floor((size - 1) / 2) to c + ceil((size - 1) / 2), cut at the ends.
// Every other dim (N and the spatial ones) splits freely; the channels are read whole.
#include <algorithm>
#include <cmath>

#include "axis_operator.h"

namespace unity {
namespace lrn_function {
namespace {

// The window size as a whole number of channels (a rule's random instance may hold any real).
std::int64_t window(double size, std::int64_t n) {
  if (!(size >= 1)) return 1;
  return std::min<std::int64_t>(static_cast<std::int64_t>(std::llround(std::min(size, 1e9))),
                                2 * n + 1);
}

// The denominators' bases d_c = bias + alpha / size * sum of x_i^2 over c's window.
std::vector<double> bases(const double* x, std::int64_t n, const double* params) {
  const std::int64_t size = window(params[0], n);
  const double alpha = params[1], bias = params[3];
  const std::int64_t below = (size - 1) / 2, above = size - 1 - below;
  std::vector<double> d(static_cast<std::size_t>(n));
  for (std::int64_t c = 0; c < n; ++c) {
    double sum = 0;
    for (std::int64_t i = std::max<std::int64_t>(0, c - below);
         i <= std::min<std::int64_t>(n - 1, c + above); ++i)
      sum += x[i] * x[i];
    d[static_cast<std::size_t>(c)] = bias + alpha / static_cast<double>(size) * sum;
  }
  return d;
}

}  // namespace

// params: size, alpha, beta, bias.
void forward(const double* x, double* y, std::int64_t n, const double* params) {
  const auto d = bases(x, n, params);
  for (std::int64_t c = 0; c < n; ++c) y[c] = x[c] * std::pow(d[c], -params[2]);
}

// dx_j = dy_j d_j^-beta - 2 beta alpha / size x_j sum over the c whose window holds j of
// dy_c x_c d_c^(-beta - 1).
void backward(const double* x, const double*, const double* dy, double* dx, std::int64_t n,
              const double* params) {
  const auto d = bases(x, n, params);
  const std::int64_t size = window(params[0], n);
  const double alpha = params[1], beta = params[2];
  const std::int64_t below = (size - 1) / 2, above = size - 1 - below;
  std::vector<double> through(static_cast<std::size_t>(n));
  for (std::int64_t c = 0; c < n; ++c) through[c] = dy[c] * x[c] * std::pow(d[c], -beta - 1);
  for (std::int64_t j = 0; j < n; ++j) {
    double sum = 0;  // the c with c - below <= j <= c + above
    for (std::int64_t c = std::max<std::int64_t>(0, j - above);
         c <= std::min<std::int64_t>(n - 1, j + below); ++c)
      sum += through[c];
    dx[j] =
        dy[j] * std::pow(d[j], -beta) - 2 * beta * alpha / static_cast<double>(size) * x[j] * sum;
  }
}

}  // namespace lrn_function

// A square and add per window element (5 channels as AlexNet's), the scale, a pow and a multiply.
UNITY_AXIS_OPERATOR(LRN,
                    (AxisFunction{lrn_function::forward,
                                  lrn_function::backward,
                                  14,
                                  true,
                                  {{"size", std::nullopt, "size"},
                                   {"alpha", 1e-4, "alpha"},
                                   {"beta", 0.75, "beta"},
                                   {"bias", 1.0, "bias"}},
                                  false,
                                  1}),
                    (std::vector<std::string_view>{"LRN"}),
                    "local response normalisation across the channels (axis 1 from ONNX)")

}  // namespace unity
