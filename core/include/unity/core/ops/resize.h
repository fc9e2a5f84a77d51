#pragma once
// Resize (ONNX Resize and Upsample, torch.nn.functional.interpolate): each listed axis of x is
// resampled to a new size, nearest, linear (N-d: bilinear, trilinear) or cubic, the dims not listed
// pass through. The node holds the resolved output sizes of the listed axes (`axes`, `sizes`) and
// the mode attributes: the scale of an axis is sizes / input size, unless the node has a `scale`.
// ONNX maps coordinates by the scale it is given, which differs from sizes / input size where
// input size x scale is not a whole number (0.6 of 2 elements gives 1): the importer then keeps
// that scale, one for every listed axis.
//
// The interpolation is separable: one axis at a time, each output index a weighted sum of a few
// input indices along the axis (its taps), clamped at the borders as ONNX's reference does. The
// backward is the transpose: each tap scatters weight x dy back. The shape inference, the work,
// the executor's kernel and the rule evaluator all read this one description.
#include <cstdint>
#include <string>
#include <vector>

#include "unity/core/pcg/operator.h"

namespace unity {

enum class ResizeMode { Nearest, Linear, Cubic };
enum class ResizeCoordinates {
  HalfPixel,
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  TfHalfPixelForNn
};
enum class ResizeNearest { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };

// The names the attributes take, in the enums' order (ONNX's spellings).
const std::vector<std::string>& resize_mode_names();
const std::vector<std::string>& resize_coordinate_names();
const std::vector<std::string>& resize_nearest_names();

struct ResizeSpec {
  std::vector<int> axes;            // increasing, non-negative
  std::vector<std::int64_t> sizes;  // output size of each listed axis
  ResizeMode mode = ResizeMode::Nearest;
  ResizeCoordinates coordinates = ResizeCoordinates::HalfPixel;
  ResizeNearest nearest = ResizeNearest::RoundPreferFloor;
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  double scale = 0;  // the `scale` attribute: every listed axis maps by it (0: sizes / input size)

  // Input indices read per output index along one resized axis (1, 2 or 4).
  int taps() const { return mode == ResizeMode::Nearest ? 1 : mode == ResizeMode::Linear ? 2 : 4; }
};

// The node's attributes, checked against an input of rank `rank` (throws ShapeError naming the
// attribute that is missing or wrong).
ResizeSpec resize_spec(const Operator& op, int rank);

// The taps of one axis resized from `in` to `out` elements: out x spec.taps() (index, weight).
struct ResizeTap {
  std::int64_t index = 0;
  double weight = 0;
};
std::vector<ResizeTap> resize_axis_taps(const ResizeSpec& spec, std::int64_t in, std::int64_t out);

// y = Resize(x) for x of local extents `in_dims` into y of extents `out_dims` (the listed axes
// resized, the others equal). Overwrites y.
template <typename T>
void resize_forward(const ResizeSpec& spec, const std::vector<std::int64_t>& in_dims,
                    const std::vector<std::int64_t>& out_dims, const T* x, T* y);
// dx += the transpose of the interpolation applied to dy.
template <typename T>
void resize_backward(const ResizeSpec& spec, const std::vector<std::int64_t>& in_dims,
                     const std::vector<std::int64_t>& out_dims, const T* dy, T* dx);

}  // namespace unity
