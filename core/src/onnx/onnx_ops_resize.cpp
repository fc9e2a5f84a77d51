// Resize (opsets 10, 11, 13, 18) and Upsample (opsets 7, 9) as one Resize node. The scales or
// sizes must be constants once the batch is fixed (torchvision's segmentation heads compute the
// sizes through Shape, Gather, Concat and Cast, which the importer folds); the node keeps the
// resolved output sizes of the resized axes and the mode attributes, so it stands on its own.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "onnx/folding_kernels.h"
#include "onnx/onnx_op_mapping.h"
#include "unity/core/errors.h"
#include "unity/core/ops/resize.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

std::vector<double> scales_of(ImportContext& ctx, const std::string& value) {
  const ConstTensor& c = ctx.constant(value);
  std::vector<double> s;
  for (std::int64_t i = 0; i < c.numel(); ++i) s.push_back(c.as_double(i));
  return s;
}

// One Resize node for x resized to `out` (the whole output shape), `scales` the given scales (empty
// when sizes were given: each then is out / in).
void emit_resize(ImportContext& ctx, const ::onnx::NodeProto& node, const std::string& mode,
                 const std::string& coordinates, const std::string& nearest, double cubic_a,
                 std::int64_t exclude_outside, const Ints& out, const std::vector<double>& scales) {
  const TensorRef x = ctx.tensor(node.input(0));
  const Ints in = ctx.sizes(x);
  if (out.size() != in.size())
    unsupported_use(node, fmt::format("the output shape {} does not have the input's rank {}",
                                      format_dims(out), in.size()));
  auto known = [](const std::vector<std::string>& names, const std::string& v) {
    return std::find(names.begin(), names.end(), v) != names.end();
  };
  if (!known(resize_mode_names(), mode))
    unsupported_use(node, fmt::format("mode '{}' is not supported (nearest, linear, cubic)", mode));
  if (!known(resize_coordinate_names(), coordinates))
    unsupported_use(
        node, fmt::format("coordinate_transformation_mode '{}' is not supported", coordinates));
  if (!known(resize_nearest_names(), nearest))
    unsupported_use(node, fmt::format("nearest_mode '{}' is not supported", nearest));
  // ONNX maps coordinates by the given scale; sizes / input size is the same scale only when
  // input size x scale is a whole number. Otherwise the node keeps the scale, which must then be
  // the one of every axis it resizes.
  bool keep_scale = false;
  for (std::size_t d = 0; d < in.size() && !scales.empty(); ++d) {
    const double exact = static_cast<double>(in[d]) * scales[d];
    keep_scale = keep_scale || std::abs(exact - static_cast<double>(out[d])) > 1e-5 * exact;
  }
  Ints axes, sizes;
  double scale = 0;
  for (std::size_t d = 0; d < in.size(); ++d) {
    if (out[d] < 1) unsupported_use(node, fmt::format("dim {} would have size {}", d, out[d]));
    if (out[d] == in[d] && (!keep_scale || scales[d] == 1.0)) continue;
    if (keep_scale) {
      if (scale != 0 && scales[d] != scale)
        unsupported_use(node, fmt::format("scales {} differ between the resized dims, and input "
                                          "size x scale is not a whole number: Unity keeps one "
                                          "scale for every resized dim",
                                          fmt::join(scales, ", ")));
      scale = scales[d];
    }
    axes.push_back(static_cast<std::int64_t>(d));
    sizes.push_back(out[d]);
  }
  if (axes.empty()) {
    ctx.bind_tensor(node.output(0), x);
    return;
  }
  Attributes attrs{{"axes", axes},
                   {"sizes", sizes},
                   {"mode", mode},
                   {"coordinate_transformation_mode", coordinates}};
  if (scale != 0) attrs.set("scale", scale);
  if (mode == "nearest") attrs.set("nearest_mode", nearest);
  if (mode == "cubic") {
    attrs.set("cubic_coeff_a", cubic_a);
    attrs.set("exclude_outside", exclude_outside);
  }
  ctx.bind_tensor(node.output(0), ctx.add(OpType::Resize, std::move(attrs), {x}, node_name(node)));
}

// tf_crop_and_resize: output index i of an axis samples the input at start (n - 1) + i (end -
// start) (n - 1) / (m - 1) (the middle of the region when m = 1), for the region [start, end) of
// the axis (fractions of it, the `roi` input); a sample outside [0, n - 1] is the
// extrapolation_value. The coordinates are known at import, so each resampled axis is a product
// with a Constant [n, m] matrix of its taps (linear: two, nearest: one), and an Add of a Constant
// puts the extrapolation value where a sample falls outside on any axis (its matrix column is zero
// there). The gradient flows through the products.
void emit_crop_and_resize(ImportContext& ctx, const ::onnx::NodeProto& node,
                          const std::string& mode, const std::string& nearest, const Ints& out) {
  const std::string name = node_name(node);
  TensorRef x = ctx.tensor(node.input(0));
  const Ints in = ctx.sizes(x);
  const auto rank = static_cast<std::int64_t>(in.size());
  if (static_cast<std::int64_t>(out.size()) != rank)
    unsupported_use(node, fmt::format("the output shape {} does not have the input's rank {}",
                                      format_dims(out), rank));
  if (mode != "linear" && mode != "nearest")
    unsupported_use(node, fmt::format("tf_crop_and_resize with mode '{}' (supported: linear, "
                                      "nearest)",
                                      mode));
  const std::string& roi_value = input_name(node, 1);
  if (roi_value.empty() || !ctx.is_constant(roi_value))
    unsupported_use(node, "tf_crop_and_resize needs a constant roi");
  const std::vector<double> roi = scales_of(ctx, roi_value);
  if (static_cast<std::int64_t>(roi.size()) != 2 * rank)
    unsupported_use(
        node, fmt::format("roi has {} values for a rank-{} input (2 per dim)", roi.size(), rank));
  const double extrapolation = attr_float(node, "extrapolation_value", 0.0);
  // Per output dim, whether each index samples inside the input (1) or is extrapolated (0).
  std::vector<std::vector<double>> inside(static_cast<std::size_t>(rank));
  bool any_outside = false;
  for (std::int64_t d = 0; d < rank; ++d) {
    const auto du = static_cast<std::size_t>(d);
    const std::int64_t n = in[du], m = out[du];
    // The dim's taps are an [n, m] Constant: bounded as folded constants are.
    require_constant_size(node, "tf_crop_and_resize matrix of taps", {n, m});
    const double start = roi[du], end = roi[du + static_cast<std::size_t>(rank)];
    inside[du].assign(static_cast<std::size_t>(m), 1.0);
    std::vector<double> w(static_cast<std::size_t>(n * m), 0.0);  // [n, m]
    for (std::int64_t i = 0; i < m; ++i) {
      const double at = m > 1 ? start * static_cast<double>(n - 1) +
                                    static_cast<double>(i) * (end - start) *
                                        static_cast<double>(n - 1) / static_cast<double>(m - 1)
                              : 0.5 * (start + end) * static_cast<double>(n - 1);
      if (at < 0 || at > static_cast<double>(n - 1)) {
        inside[du][static_cast<std::size_t>(i)] = 0.0;
        any_outside = true;
        continue;
      }
      const auto low = static_cast<std::int64_t>(std::floor(at));
      const double frac = at - static_cast<double>(low);
      const auto put = [&](std::int64_t j, double weight) {
        w[static_cast<std::size_t>(std::min(j, n - 1) * m + i)] += weight;
      };
      if (mode == "linear") {
        put(low, 1.0 - frac);
        put(low + 1, frac);
      } else {
        bool up = frac > 0.5;
        if (frac == 0.5) up = nearest == "round_prefer_ceil";
        if (nearest == "floor") up = false;
        if (nearest == "ceil") up = frac > 0;
        put(up ? low + 1 : low, 1.0);
      }
    }
    bool identity = n == m;
    for (std::int64_t i = 0; identity && i < m; ++i)
      identity = w[static_cast<std::size_t>(i * m + i)] == 1.0;
    if (identity) continue;
    // The axis last, a product with [n, m], the axis back in its place.
    Ints perm;
    for (std::int64_t e = 0; e < rank; ++e)
      if (e != d) perm.push_back(e);
    perm.push_back(d);
    Ints back(static_cast<std::size_t>(rank));
    for (std::int64_t e = 0; e < rank; ++e)
      back[static_cast<std::size_t>(perm[static_cast<std::size_t>(e)])] = e;
    const std::string axis = fmt::format("{}.axis{}", name, d);
    const std::string matrix =
        ctx.fresh_constant(axis + ".taps", ConstTensor::from_doubles(std::move(w), {n, m}));
    const TensorRef rows = ctx.transpose(x, perm, axis + ".last");
    const TensorRef sampled = ctx.add(OpType::MatMul, {}, {rows, ctx.tensor(matrix)}, axis);
    x = ctx.transpose(sampled, back, axis + ".back");
  }
  if (any_outside && extrapolation != 0.0) {
    // extrapolation x (1 - the product of the dims' inside flags), over the output's shape.
    require_constant_size(node, "tf_crop_and_resize extrapolation fill", out);
    std::vector<double> fill(static_cast<std::size_t>(product(out)), 0.0);
    folding::for_each_index(out, [&](const Ints& index, std::int64_t flat) {
      double in_all = 1.0;
      for (std::size_t d = 0; d < index.size(); ++d)
        in_all *= inside[d][static_cast<std::size_t>(index[d])];
      fill[static_cast<std::size_t>(flat)] = extrapolation * (1.0 - in_all);
    });
    const std::string constant = ctx.fresh_constant(
        name + ".extrapolation", ConstTensor::from_doubles(std::move(fill), out));
    x = ctx.add(OpType::Add, {}, {x, ctx.tensor(constant)}, name + ".extrapolated");
  }
  ctx.bind_tensor(node.output(0), x);
}

Ints sizes_from_scales(const Ints& in, const std::vector<double>& scales,
                       const ::onnx::NodeProto& node) {
  if (scales.size() != in.size())
    unsupported_use(node, fmt::format("{} scales for a rank-{} input", scales.size(), in.size()));
  Ints out;
  for (std::size_t d = 0; d < in.size(); ++d)
    out.push_back(
        static_cast<std::int64_t>(std::floor(static_cast<double>(in[d]) * scales[d] * (1 + 1e-7))));
  return out;
}

void map_resize(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  const Ints in = ctx.sizes(ctx.tensor(node.input(0)));
  const std::string mode = attr_string(node, "mode", "nearest");
  // Opset 10 had neither coordinate modes nor rounding modes: asymmetric and floor, as Upsample.
  const std::string coordinates =
      opset < 11 ? "asymmetric" : attr_string(node, "coordinate_transformation_mode", "half_pixel");
  const std::string nearest =
      opset < 11 ? "floor" : attr_string(node, "nearest_mode", "round_prefer_floor");
  if (attr_int(node, "antialias", 0) != 0) unsupported_use(node, "antialias=1 is not supported");
  const std::string policy = attr_string(node, "keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch")
    unsupported_use(node, fmt::format("keep_aspect_ratio_policy '{}' is not supported", policy));
  const std::string& scales_in = input_name(node, opset < 11 ? 1 : 2);
  const std::string& sizes_in = opset < 11 ? input_name(node, 99) : input_name(node, 3);
  // Opset 18: the scales or sizes of the listed axes only.
  const Ints listed = attr_ints(node, "axes").value_or(Ints{});
  auto spread = [&](auto values, auto fill) {
    if (listed.empty()) return values;
    decltype(values) all(in.size(), fill);
    for (std::size_t i = 0; i < listed.size() && i < values.size(); ++i) {
      const std::int64_t a =
          listed[i] < 0 ? listed[i] + static_cast<std::int64_t>(in.size()) : listed[i];
      all.at(static_cast<std::size_t>(a)) = values[i];
    }
    return all;
  };
  std::vector<double> scales;
  Ints out;
  if (!sizes_in.empty() && ctx.constant(sizes_in).numel() > 0) {
    out = spread(ctx.constant(sizes_in).to_ints(), std::int64_t{0});
    for (std::size_t d = 0; d < in.size() && d < out.size(); ++d)
      if (out[d] == 0) out[d] = in[d];
  } else if (!scales_in.empty()) {
    scales = spread(scales_of(ctx, scales_in), 1.0);
    out = sizes_from_scales(in, scales, node);
  } else {
    unsupported_use(node, "neither scales nor sizes are given");
  }
  if (coordinates == "tf_crop_and_resize") {
    emit_crop_and_resize(ctx, node, mode, nearest, out);
    return;
  }
  // align_corners maps by the sizes alone; ONNX still derives them from the scales.
  emit_resize(ctx, node, mode, coordinates, nearest, attr_float(node, "cubic_coeff_a", -0.75),
              attr_int(node, "exclude_outside", 0), out, scales);
}

void map_upsample(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  const Ints in = ctx.sizes(ctx.tensor(node.input(0)));
  std::string mode = attr_string(node, "mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  std::vector<double> scales;
  if (opset < 9) {
    const auto* a = find_attribute(node, "scales");
    if (!a) unsupported_use(node, "the attribute 'scales' is missing");
    scales.assign(a->floats().begin(), a->floats().end());
  } else {
    scales = scales_of(ctx, node.input(1));
  }
  emit_resize(ctx, node, mode, "asymmetric", "floor", -0.75, 0, sizes_from_scales(in, scales, node),
              scales);
}

}  // namespace

static void register_resize_ops(OnnxImports& table) {
  table["Resize"] = map_resize;
  table["Upsample"] = map_upsample;
}

UNITY_REGISTER_ONNX_IMPORTS(register_resize_ops)

}  // namespace unity::onnxio
