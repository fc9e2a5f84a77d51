// DFT and STFT (opset 17; torch.stft, the front ends of audio models) as the products they are:
// a discrete Fourier transform of n samples is a product with an [n, m] matrix of cosines and
// sines, which the importer writes as a Constant. DFT is one MatMul over the transformed axis
// (real and imaginary parts stacked: [xr | xi] [[C, sS], [-sS, C]] = [Re | Im], s = -1 forward,
// +1 inverse); STFT is one 1-D convolution whose kernels are the window times those rows, strided
// by the frame step. Gradients flow to the signal through MatMul's and Conv's own backward; the
// matrices are not trained. No new kernel, rule or axiom.
#include <fmt/format.h>

#include <cmath>

#include "onnx/constant_folding.h"
#include "onnx/onnx_op_mapping.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

constexpr double kTau = 6.283185307179586;

// The coefficients that sample j of part `part` (0 real, 1 imaginary) gives to the real (re) and
// imaginary (im) output at frequency k of an `n`-point transform (sign -1 forward, +1 inverse).
struct Rotation {
  double re = 0, im = 0;
};
Rotation coefficient(int part, std::int64_t j, std::int64_t k, std::int64_t n, double sign) {
  const double angle = kTau * static_cast<double>((j * k) % n) / static_cast<double>(n);
  const double c = std::cos(angle), s = sign * std::sin(angle);
  // (xr + i xi)(c + i s) = xr c - xi s + i (xr s + xi c)
  return part == 0 ? Rotation{c, s} : Rotation{-s, c};
}

void map_dft(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  const std::string name = node_name(node);
  const TensorRef x = ctx.tensor(node.input(0));
  const Ints dims = ctx.sizes(x);
  const auto rank = static_cast<std::int64_t>(dims.size());
  if (rank < 3 || (dims.back() != 1 && dims.back() != 2))
    unsupported_use(node, fmt::format("the input {} is not [batch, signal..., 1 or 2] (a real or "
                                      "complex signal with a batch dim)",
                                      format_dims(dims)));
  const std::int64_t parts = dims.back();
  std::int64_t axis_attr = attr_int(node, "axis", 1);
  if (opset >= 20) {
    axis_attr = -2;
    if (!input_name(node, 2).empty()) axis_attr = size_constant(ctx, node, 2, "axis");
  }
  const int axis = normalize_axis(axis_attr, rank);
  if (axis < 1 || axis > rank - 2)
    unsupported_use(node, fmt::format("axis {} is not a signal dim of {} (1 to {})", axis_attr,
                                      format_dims(dims), rank - 2));
  const std::int64_t n = dims[static_cast<std::size_t>(axis)];
  const std::int64_t length =
      input_name(node, 1).empty() ? n : size_constant(ctx, node, 1, "dft_length");
  if (length < 1) unsupported_use(node, fmt::format("dft_length {} is not positive", length));
  const bool inverse = attr_int(node, "inverse", 0) != 0;
  const bool onesided = attr_int(node, "onesided", 0) != 0;
  if (inverse && onesided)
    unsupported_use(node, "an inverse transform with onesided = 1 is not defined");
  const std::int64_t m = onesided ? length / 2 + 1 : length;

  // [parts x n, 2 m]: row part x n + j, column k (real) and m + k (imaginary). Samples past the
  // transform's length are cut off; a longer transform pads zeros, which add nothing.
  const double sign = inverse ? 1.0 : -1.0;
  const double scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  require_constant_size(node, "DFT matrix", {parts, n, 2, m});
  std::vector<double> w(static_cast<std::size_t>(parts * n * 2 * m), 0.0);
  for (int part = 0; part < parts; ++part)
    for (std::int64_t j = 0; j < std::min(n, length); ++j)
      for (std::int64_t k = 0; k < m; ++k) {
        const Rotation r = coefficient(part, j, k, length, sign);
        const std::size_t row = static_cast<std::size_t>((part * n + j) * 2 * m);
        w[row + static_cast<std::size_t>(k)] = scale * r.re;
        w[row + static_cast<std::size_t>(m + k)] = scale * r.im;
      }
  const TensorRef matrix = ctx.tensor(ctx.fresh_constant(
      name + ".dft_matrix", ConstTensor::from_doubles(std::move(w), {parts * n, 2 * m})));

  // The other signal dims first, then the parts and the transformed axis: [others..., parts x n].
  Ints perm, others;
  for (std::int64_t d = 0; d < rank - 1; ++d)
    if (d != axis) {
      perm.push_back(d);
      others.push_back(dims[static_cast<std::size_t>(d)]);
    }
  perm.push_back(rank - 1);
  perm.push_back(axis);
  Ints flat = others;
  flat.push_back(parts * n);
  const TensorRef rows =
      ctx.reshape(ctx.transpose(x, perm, name + ".to_rows"), flat, name + ".rows");
  const TensorRef product = ctx.add(OpType::MatMul, {}, {rows, matrix}, name + ".product");
  // [others..., 2, m] back to the input's order with m at the axis and the parts last.
  Ints split = others;
  split.push_back(2);
  split.push_back(m);
  const TensorRef parted = ctx.reshape(product, split, name + ".parts");
  Ints back;
  for (std::int64_t d = 0, other = 0; d < rank - 1; ++d)
    back.push_back(d == axis ? rank - 1 : other++);
  back.push_back(rank - 2);
  ctx.bind_tensor(node.output(0), ctx.transpose(parted, back, name + ".spectrum"));
}

void map_stft(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const std::string name = node_name(node);
  const TensorRef signal = ctx.tensor(node.input(0));
  const Ints dims = ctx.sizes(signal);
  if (dims.size() != 3 || (dims[2] != 1 && dims[2] != 2))
    unsupported_use(node,
                    fmt::format("the signal {} is not [batch, length, 1 or 2]", format_dims(dims)));
  const std::int64_t batch = dims[0], samples = dims[1], parts = dims[2];
  const std::int64_t step = size_constant(ctx, node, 1, "frame_step");
  const std::string& window_value = input_name(node, 2);
  std::vector<double> window;
  if (!window_value.empty()) {
    if (!ctx.is_constant(window_value))
      unsupported_use(node, fmt::format("the window '{}' is computed from the model's inputs "
                                        "(supported: a constant window)",
                                        window_value));
    const ConstTensor& c = ctx.constant(window_value);
    for (std::int64_t i = 0; i < c.numel(); ++i) window.push_back(c.as_double(i));
  }
  const std::int64_t length = input_name(node, 3).empty()
                                  ? static_cast<std::int64_t>(window.size())
                                  : size_constant(ctx, node, 3, "frame_length");
  if (length < 1)
    unsupported_use(node, "neither a window nor a frame_length gives the frame's length");
  if (!window.empty() && static_cast<std::int64_t>(window.size()) != length)
    unsupported_use(node,
                    fmt::format("the window has {} samples, the frame {}", window.size(), length));
  if (window.empty()) window.assign(static_cast<std::size_t>(length), 1.0);
  if (step < 1) unsupported_use(node, fmt::format("frame_step {} is not positive", step));
  if (samples < length)
    unsupported_use(
        node, fmt::format("the signal's {} samples are fewer than a frame's {}", samples, length));
  const bool onesided = attr_int(node, "onesided", 1) != 0;
  const std::int64_t bins = onesided ? length / 2 + 1 : length;

  // Kernels [2 bins, parts, length]: the real parts of the bins, then the imaginary ones.
  require_constant_size(node, "STFT kernels", {2, bins, parts, length});
  std::vector<double> k(static_cast<std::size_t>(2 * bins * parts * length), 0.0);
  for (std::int64_t bin = 0; bin < bins; ++bin)
    for (int part = 0; part < parts; ++part)
      for (std::int64_t j = 0; j < length; ++j) {
        const Rotation r = coefficient(part, j, bin, length, -1.0);
        const double w = window[static_cast<std::size_t>(j)];
        k[static_cast<std::size_t>((bin * parts + part) * length + j)] = w * r.re;
        k[static_cast<std::size_t>(((bins + bin) * parts + part) * length + j)] = w * r.im;
      }
  const TensorRef kernels = ctx.tensor(ctx.fresh_constant(
      name + ".stft_kernels", ConstTensor::from_doubles(std::move(k), {2 * bins, parts, length})));
  const TensorRef channels = parts == 1
                                 ? ctx.reshape(signal, {batch, 1, samples}, name + ".channels")
                                 : ctx.transpose(signal, {0, 2, 1}, name + ".channels");
  const TensorRef frames = ctx.add(OpType::Conv2D,
                                   {{"out_channels", 2 * bins},
                                    {"kernel", Ints{length}},
                                    {"stride", Ints{step}},
                                    {"padding", Ints{0}},
                                    {"dilation", Ints{1}}},
                                   {channels, kernels}, name + ".frames");
  const std::int64_t count = ctx.sizes(frames)[2];
  const TensorRef parted = ctx.reshape(frames, {batch, 2, bins, count}, name + ".parts");
  ctx.bind_tensor(node.output(0), ctx.transpose(parted, {0, 3, 2, 1}, name + ".spectrum"));
}

}  // namespace

static void register_spectral_ops(OnnxImports& table) {
  table["DFT"] = map_dft;
  table["STFT"] = map_stft;
}

UNITY_REGISTER_ONNX_IMPORTS(register_spectral_ops)

}  // namespace unity::onnxio
