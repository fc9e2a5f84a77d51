// Resize: the definition, the attributes and the interpolation (unity/core/ops/resize.h). The taps
// follow ONNX's reference (onnx/backend/test/case/node/resize.py): the source coordinate of an
// output index by the coordinate transformation mode, then the neighbours of that coordinate with
// ratio r in (0, 1] (an integral coordinate counts as r = 1 from the index below), indices clamped
// to the input (its edge values repeat), and with exclude_outside the weights of indices outside
// the input dropped and the rest renormalised.
#include "unity/core/ops/resize.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/ops/operator_definition.h"

namespace unity {

template <>
const OperatorDefinition& define_operator<OpType::Resize>() {
  static const OperatorDefinition d{{OpType::Resize, "Resize", OpCategory::Compute, 1, 1},
                                    {},
                                    {},
                                    "resample the listed axes: nearest, linear or cubic",
                                    {}};
  return d;
}

const std::vector<std::string>& resize_mode_names() {
  static const std::vector<std::string> v{"nearest", "linear", "cubic"};
  return v;
}
const std::vector<std::string>& resize_coordinate_names() {
  static const std::vector<std::string> v{"half_pixel", "pytorch_half_pixel", "align_corners",
                                          "asymmetric", "tf_half_pixel_for_nn"};
  return v;
}
const std::vector<std::string>& resize_nearest_names() {
  static const std::vector<std::string> v{"round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil"};
  return v;
}

namespace {

template <typename E>
E enum_attr(const Operator& op, const char* name, const std::vector<std::string>& names,
            const std::string& fallback) {
  const std::string value = op.attrs.get_string(name, fallback);
  auto it = std::find(names.begin(), names.end(), value);
  if (it == names.end())
    throw ShapeError(fmt::format("attribute '{}' is '{}', expected one of {}", name, value,
                                 fmt::join(names, ", ")));
  return static_cast<E>(it - names.begin());
}

// The source coordinate of output index x (ONNX's coordinate transformation modes); `given` is
// the node's scale (0: out / in). ONNX's length of the resized axis is in x scale, which with a
// given scale need not be the whole number of outputs.
double source_coordinate(ResizeCoordinates c, double x, std::int64_t in, std::int64_t out,
                         double given) {
  const double scale = given > 0 ? given : static_cast<double>(out) / static_cast<double>(in);
  const double length = given > 0 ? static_cast<double>(in) * given : static_cast<double>(out);
  switch (c) {
    case ResizeCoordinates::HalfPixel:
      return (x + 0.5) / scale - 0.5;
    case ResizeCoordinates::PytorchHalfPixel:
      return length > 1 ? (x + 0.5) / scale - 0.5 : -0.5;
    case ResizeCoordinates::AlignCorners:
      return length > 1 ? x * static_cast<double>(in - 1) / (length - 1) : 0.0;
    case ResizeCoordinates::Asymmetric:
      return x / scale;
    case ResizeCoordinates::TfHalfPixelForNn:
      return (x + 0.5) / scale;
  }
  return x;
}

// Keys's cubic convolution weights of the four neighbours at distance 1 + r, r, 1 - r, 2 - r.
void cubic_weights(double r, double a, double* w) {
  const double s = 1 - r;
  w[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
  w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
  w[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
  w[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
}

// Applies one axis: `from` has extents [outer, in, inner], `to` [outer, out, inner].
template <typename T>
void apply_axis(const std::vector<ResizeTap>& taps, int k, std::int64_t outer, std::int64_t in,
                std::int64_t out, std::int64_t inner, const T* from, T* to) {
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < out; ++j) {
      T* dst = to + (o * out + j) * inner;
      std::fill(dst, dst + inner, T(0));
      for (int t = 0; t < k; ++t) {
        const ResizeTap& tap = taps[static_cast<std::size_t>(j * k + t)];
        if (tap.weight == 0) continue;
        const T* src = from + (o * in + tap.index) * inner;
        const T w = static_cast<T>(tap.weight);
        for (std::int64_t i = 0; i < inner; ++i) dst[i] += w * src[i];
      }
    }
}

// The transpose of apply_axis: adds into `from_grad` [outer, in, inner].
template <typename T>
void apply_axis_transpose(const std::vector<ResizeTap>& taps, int k, std::int64_t outer,
                          std::int64_t in, std::int64_t out, std::int64_t inner, const T* to_grad,
                          T* from_grad) {
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < out; ++j) {
      const T* g = to_grad + (o * out + j) * inner;
      for (int t = 0; t < k; ++t) {
        const ResizeTap& tap = taps[static_cast<std::size_t>(j * k + t)];
        if (tap.weight == 0) continue;
        T* dst = from_grad + (o * in + tap.index) * inner;
        const T w = static_cast<T>(tap.weight);
        for (std::int64_t i = 0; i < inner; ++i) dst[i] += w * g[i];
      }
    }
}

std::int64_t product(const std::vector<std::int64_t>& v, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t i = from; i < to; ++i) p *= v[i];
  return p;
}

// The extents after the first `stage` listed axes were resized.
std::vector<std::int64_t> stage_dims(const ResizeSpec& spec, const std::vector<std::int64_t>& in,
                                     const std::vector<std::int64_t>& out, std::size_t stage) {
  std::vector<std::int64_t> d = in;
  for (std::size_t s = 0; s < stage; ++s) {
    const auto a = static_cast<std::size_t>(spec.axes[s]);
    d[a] = out[a];
  }
  return d;
}

}  // namespace

ResizeSpec resize_spec(const Operator& op, int rank) {
  ResizeSpec s;
  const auto axes = op.attrs.get_ints("axes");
  s.sizes = op.attrs.get_ints("sizes");
  if (axes.size() != s.sizes.size())
    throw ShapeError(
        fmt::format("attribute 'sizes' has {} values for {} axes", s.sizes.size(), axes.size()));
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= rank || (i > 0 && axes[i] <= axes[i - 1]))
      throw ShapeError(
          fmt::format("attribute 'axes' [{}] must be increasing dims of the rank-{} "
                      "input",
                      fmt::join(axes, ", "), rank));
    if (s.sizes[i] < 1)
      throw ShapeError(
          fmt::format("attribute 'sizes' [{}] must be positive", fmt::join(s.sizes, ", ")));
    s.axes.push_back(static_cast<int>(axes[i]));
  }
  s.mode = enum_attr<ResizeMode>(op, "mode", resize_mode_names(), "nearest");
  s.coordinates = enum_attr<ResizeCoordinates>(op, "coordinate_transformation_mode",
                                               resize_coordinate_names(), "half_pixel");
  s.nearest =
      enum_attr<ResizeNearest>(op, "nearest_mode", resize_nearest_names(), "round_prefer_floor");
  s.cubic_coeff_a = op.attrs.get_double("cubic_coeff_a", -0.75);
  s.exclude_outside = op.attrs.get_int("exclude_outside", 0) != 0;
  s.scale = op.attrs.get_double("scale", 0.0);
  if (op.attrs.has("scale") && !(s.scale > 0))
    throw ShapeError(fmt::format("attribute 'scale' must be positive, got {}", s.scale));
  return s;
}

std::vector<ResizeTap> resize_axis_taps(const ResizeSpec& spec, std::int64_t in, std::int64_t out) {
  const int k = spec.taps();
  std::vector<ResizeTap> taps(static_cast<std::size_t>(out * k));
  for (std::int64_t j = 0; j < out; ++j) {
    const double x =
        source_coordinate(spec.coordinates, static_cast<double>(j), in, out, spec.scale);
    // The index below x with r in (0, 1]: an integral x is r = 1 from x - 1.
    const auto f = static_cast<std::int64_t>(std::ceil(x)) - 1;
    const double r = x - static_cast<double>(f);
    double w[4] = {0, 0, 0, 0};
    std::int64_t first = f;  // the index of w[0]
    switch (spec.mode) {
      case ResizeMode::Nearest: {
        bool up = true;  // f + 1 rather than f
        if (r < 1) {
          switch (spec.nearest) {
            case ResizeNearest::RoundPreferFloor:
              up = r > 0.5;
              break;
            case ResizeNearest::RoundPreferCeil:
              up = r >= 0.5;
              break;
            case ResizeNearest::Floor:
              up = false;
              break;
            case ResizeNearest::Ceil:
              up = true;
              break;
          }
        }
        first = up ? f + 1 : f;
        w[0] = 1;
        break;
      }
      case ResizeMode::Linear:
        w[0] = 1 - r;
        w[1] = r;
        break;
      case ResizeMode::Cubic:
        first = f - 1;
        cubic_weights(r, spec.cubic_coeff_a, w);
        break;
    }
    if (spec.exclude_outside) {
      double total = 0;
      for (int t = 0; t < k; ++t) {
        if (first + t < 0 || first + t >= in) w[t] = 0;
        total += w[t];
      }
      if (total != 0)
        for (int t = 0; t < k; ++t) w[t] /= total;
    }
    for (int t = 0; t < k; ++t)
      taps[static_cast<std::size_t>(j * k + t)] = {std::clamp<std::int64_t>(first + t, 0, in - 1),
                                                   w[t]};
  }
  return taps;
}

template <typename T>
void resize_forward(const ResizeSpec& spec, const std::vector<std::int64_t>& in_dims,
                    const std::vector<std::int64_t>& out_dims, const T* x, T* y) {
  std::vector<T> from(x, x + product(in_dims, 0, in_dims.size())), to;
  for (std::size_t s = 0; s < spec.axes.size(); ++s) {
    const auto a = static_cast<std::size_t>(spec.axes[s]);
    const auto cur = stage_dims(spec, in_dims, out_dims, s);
    const std::int64_t outer = product(cur, 0, a), inner = product(cur, a + 1, cur.size());
    to.assign(static_cast<std::size_t>(outer * out_dims[a] * inner), T(0));
    apply_axis(resize_axis_taps(spec, in_dims[a], out_dims[a]), spec.taps(), outer, in_dims[a],
               out_dims[a], inner, from.data(), to.data());
    from.swap(to);
  }
  std::copy(from.begin(), from.end(), y);
}

template <typename T>
void resize_backward(const ResizeSpec& spec, const std::vector<std::int64_t>& in_dims,
                     const std::vector<std::int64_t>& out_dims, const T* dy, T* dx) {
  std::vector<T> grad(dy, dy + product(out_dims, 0, out_dims.size())), prev;
  for (std::size_t s = spec.axes.size(); s-- > 0;) {
    const auto a = static_cast<std::size_t>(spec.axes[s]);
    const auto cur = stage_dims(spec, in_dims, out_dims, s);
    const std::int64_t outer = product(cur, 0, a), inner = product(cur, a + 1, cur.size());
    prev.assign(static_cast<std::size_t>(outer * in_dims[a] * inner), T(0));
    apply_axis_transpose(resize_axis_taps(spec, in_dims[a], out_dims[a]), spec.taps(), outer,
                         in_dims[a], out_dims[a], inner, grad.data(), prev.data());
    grad.swap(prev);
  }
  for (std::size_t i = 0; i < grad.size(); ++i) dx[i] += grad[i];
}

template void resize_forward<float>(const ResizeSpec&, const std::vector<std::int64_t>&,
                                    const std::vector<std::int64_t>&, const float*, float*);
template void resize_forward<double>(const ResizeSpec&, const std::vector<std::int64_t>&,
                                     const std::vector<std::int64_t>&, const double*, double*);
template void resize_backward<float>(const ResizeSpec&, const std::vector<std::int64_t>&,
                                     const std::vector<std::int64_t>&, const float*, float*);
template void resize_backward<double>(const ResizeSpec&, const std::vector<std::int64_t>&,
                                      const std::vector<std::int64_t>&, const double*, double*);

}  // namespace unity
