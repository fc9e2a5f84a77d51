// Dense operators: Gemm and MatMul -> Linear / MatMul / BatchMatMul, Conv -> Conv2D,
// ConvTranspose, pooling -> Pool2D (1 to 3 spatial dims), BatchNormalization, LayerNormalization,
// InstanceNormalization and GroupNormalization.
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "onnx/constant_folding.h"
#include "onnx/onnx_op_mapping.h"
#include "unity/core/errors.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

TensorRef activation(ImportContext& ctx, const ::onnx::NodeProto& node, int slot) {
  const std::string& name = input_name(node, slot);
  if (name.empty()) unsupported_use(node, fmt::format("input #{} is missing", slot));
  return ctx.tensor(name);
}

// x [N, C, spatial...] with 1, 2 or 3 spatial dims.
TensorRef require_spatial(ImportContext& ctx, const ::onnx::NodeProto& node) {
  const TensorRef x = activation(ctx, node, 0);
  const auto sizes = ctx.sizes(x);
  if (sizes.size() < 3 || sizes.size() > 5) {
    unsupported_use(node, fmt::format("only 1-D, 2-D and 3-D spatial operators on [N, C, "
                                      "spatial...] inputs are supported, the input has shape {}",
                                      format_dims(sizes)));
  }
  return x;
}

// ONNX's pads of a Conv or pooling node, [begin..., end...], as given or derived from auto_pad
// (SAME_UPPER puts the odd pixel at the end, SAME_LOWER at the beginning).
Ints onnx_pads(const ::onnx::NodeProto& node, const Ints& spatial, const Ints& kernel,
               const Ints& strides, const Ints& dilations) {
  const std::size_t r = spatial.size();
  const std::string auto_pad = attr_string(node, "auto_pad", "NOTSET");
  Ints pads(2 * r, 0);
  if (auto_pad == "VALID") return pads;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (std::size_t d = 0; d < r; ++d) {
      const std::int64_t out = (spatial[d] + strides[d] - 1) / strides[d];
      const std::int64_t total = std::max<std::int64_t>(
          (out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - spatial[d], 0);
      const std::int64_t small = total / 2;
      pads[d] = auto_pad == "SAME_UPPER" ? small : total - small;
      pads[d + r] = total - pads[d];
    }
  } else if (auto pad_attr = attr_ints(node, "pads")) {
    if (pad_attr->size() != 2 * r)
      unsupported_use(node, fmt::format("pads {} do not have two entries per spatial dim ({})",
                                        format_dims(*pad_attr), r));
    pads = *pad_attr;
  }
  return pads;
}

Ints ints_or(const ::onnx::NodeProto& node, const std::string& name, Ints fallback) {
  return attr_ints(node, name).value_or(std::move(fallback));
}

// A per-spatial-dim attribute of a Conv or pooling node (kernel_shape, strides, dilations): one
// positive entry per spatial dim, or the node is refused (the padding and output sizes divide by
// them).
Ints spatial_list(const ::onnx::NodeProto& node, const std::string& name, std::size_t rank,
                  Ints fallback) {
  const Ints v = ints_or(node, name, std::move(fallback));
  bool ok = v.size() == rank;
  for (auto e : v) ok = ok && e >= 1;
  if (!ok)
    unsupported_use(node, fmt::format("{} {} must be {} positive numbers (one per spatial dim)",
                                      name, format_dims(v), rank));
  return v;
}

// The pads [begin..., end...] of a Conv or pooling node, plus those of a zero Pad folded into it.
Ints node_pads(const ImportContext& ctx, const ::onnx::NodeProto& node, const Ints& input_sizes,
               const Ints& kernel, const Ints& strides, const Ints& dilations) {
  const std::size_t r = input_sizes.size() - 2;
  Ints extra = ctx.extra_padding(node.input(0));
  if (extra.size() != r) extra.assign(r, 0);  // none folded (the default is two zeros)
  Ints padded(r);
  for (std::size_t d = 0; d < r; ++d) padded[d] = input_sizes[2 + d] + 2 * extra[d];
  Ints pads = onnx_pads(node, padded, kernel, strides, dilations);
  for (std::size_t d = 0; d < r; ++d) {
    pads[d] += extra[d];
    pads[d + r] += extra[d];
  }
  return pads;
}

// The padding of a Conv node: our Conv2D pads both sides of a dim equally.
Ints node_padding(const ImportContext& ctx, const ::onnx::NodeProto& node, const Ints& input_sizes,
                  const Ints& kernel, const Ints& strides, const Ints& dilations) {
  const Ints pads = node_pads(ctx, node, input_sizes, kernel, strides, dilations);
  const std::size_t r = pads.size() / 2;
  for (std::size_t d = 0; d < r; ++d)
    if (pads[d] != pads[d + r])
      unsupported_use(node,
                      fmt::format("asymmetric padding {} (begins, then ends) is not supported; "
                                  "Unity pads both sides of a dimension equally",
                                  format_dims(pads)));
  return Ints(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(r));
}

// ceil_mode=1 rounds output sizes up (a last, partial window), where Pool2D rounds down: the
// partial window is padding after the dim, which pooling never reads (max) or counts (average
// without count_include_pad). As in PyTorch and ONNX, the last window must start inside the input
// or its left padding. Returns the end pads that give the ceil_mode output sizes.
Ints ceil_mode_end_pads(const Ints& spatial, const Ints& kernel, const Ints& strides,
                        const Ints& dilations, const Ints& pads) {
  const std::size_t r = spatial.size();
  Ints end(pads.begin() + static_cast<std::ptrdiff_t>(r), pads.end());
  for (std::size_t d = 0; d < r; ++d) {
    const std::int64_t window = (kernel[d] - 1) * dilations[d] + 1;
    const std::int64_t span = spatial[d] + pads[d] + end[d] - window;
    if (span < 0) continue;  // shape inference says the window does not fit
    std::int64_t ceil_out = (span + strides[d] - 1) / strides[d] + 1;
    if ((ceil_out - 1) * strides[d] >= spatial[d] + pads[d]) --ceil_out;
    end[d] = std::max(end[d], (ceil_out - 1) * strides[d] + window - spatial[d] - pads[d]);
  }
  return end;
}

void map_matmul(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const std::string& a = node.input(0);
  const std::string& b = node.input(1);
  const std::string name = node_name(node);
  if (!ctx.is_constant(a) && ctx.is_constant(b) && ctx.rank(b) == 2) {
    // Activation times a weight matrix is a Linear layer without bias (torch exports nn.Linear on
    // 3-D inputs this way; the bias Add is merged by pattern recognition).
    const Ints w = ctx.dims(b);
    ctx.bind_tensor(node.output(0), ctx.add(OpType::Linear, {{"out_features", w[1]}},
                                            {ctx.tensor(a), ctx.tensor(b)}, name));
    return;
  }
  const TensorRef ta = ctx.tensor(a);
  const TensorRef tb = ctx.tensor(b);
  const std::size_t ra = ctx.sizes(ta).size();
  const std::size_t rb = ctx.sizes(tb).size();
  OpType type;
  if (ra >= 2 && rb == 2)
    type = OpType::MatMul;
  else if (ra >= 3 && ra == rb)
    type = OpType::BatchMatMul;
  else {
    unsupported_use(node, fmt::format("MatMul of shapes {} and {} (1-D operands or batch dims of "
                                      "different ranks) is not supported",
                                      format_dims(ctx.sizes(ta)), format_dims(ctx.sizes(tb))));
  }
  ctx.bind_tensor(node.output(0), ctx.add(type, {}, {ta, tb}, name));
}

void map_gemm(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const std::string name = node_name(node);
  const double alpha = attr_float(node, "alpha", 1.0);
  const double beta = attr_float(node, "beta", 1.0);
  const bool trans_b = attr_int(node, "transB", 0) != 0;
  TensorRef x = activation(ctx, node, 0);
  if (attr_int(node, "transA", 0) != 0)
    x = ctx.add(OpType::Transpose, {{"perm", Ints{1, 0}}}, {x}, name + ".transA");
  const std::string& b = node.input(1);
  const std::string& c = input_name(node, 2);
  bool bias_used = false;
  TensorRef out;
  if (ctx.is_constant(b)) {
    if (ctx.dims(b).size() != 2)
      unsupported_use(node, fmt::format("B of shape {} is not a matrix (Gemm's B is 2-D)",
                                        format_dims(ctx.dims(b))));
    // Our Linear weight is [in, out]; a transB=1 [out, in] initializer is imported transposed.
    const TensorRef w = trans_b ? ctx.transposed_weight(b) : ctx.tensor(b);
    const std::int64_t n = trans_b ? ctx.dims(b).at(0) : ctx.dims(b).at(1);
    std::vector<TensorRef> inputs{x, w};
    if (!c.empty() && alpha == 1.0 && ctx.is_constant(c)) {
      const Ints cd = ctx.dims(c);
      if (product(cd) == n && (cd.size() == 1 || (cd.size() == 2 && cd[0] == 1))) {
        inputs.push_back(ctx.weight(c, {n}));
        bias_used = true;
      }
    }
    out = ctx.add(OpType::Linear, {{"out_features", n}}, inputs, name);
  } else {
    TensorRef w = ctx.tensor(b);
    if (trans_b) w = ctx.add(OpType::Transpose, {{"perm", Ints{1, 0}}}, {w}, name + ".transB");
    out = ctx.add(OpType::MatMul, {}, {x, w}, name);
  }
  if (alpha != 1.0) out = ctx.add(OpType::ScalarMul, {{"scalar", alpha}}, {out}, name + ".alpha");
  if (!c.empty() && !bias_used) {
    if (ctx.is_constant(c) && product(ctx.dims(c)) == 1) {
      out = ctx.add(OpType::ScalarAdd, {{"scalar", beta * ctx.constant(c).scalar()}}, {out},
                    name + ".bias");
    } else {
      TensorRef bias = ctx.tensor(c);
      // A constant C absorbs beta into its values; a computed one needs the multiplication.
      if (beta != 1.0 && !ctx.is_constant(c)) {
        bias = ctx.add(OpType::ScalarMul, {{"scalar", beta}}, {bias}, name + ".beta");
      }
      out = ctx.add(OpType::Add, {}, {out, bias}, name + ".bias");
    }
  }
  ctx.bind_tensor(node.output(0), out);
}

void map_conv(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  ctx.bind_tensor(node.output(0), emit_conv2d(ctx, node, ""));
}

// Pooling is floating. Max pooling of integers of 16 bits or fewer (a uint8 image) is exact in
// float32: cast there and back; wider integers and averages of integers are refused.
TensorRef pool_of(ImportContext& ctx, const ::onnx::NodeProto& node, const Attributes& attrs,
                  TensorRef x) {
  const DataType type = ctx.graph().shape(x).dtype;
  const std::string name = node_name(node);
  if (is_floating(type)) return ctx.add(OpType::Pool2D, attrs, {x}, name);
  if (attrs.get_string("pool") != "max" || size_of(type) > 2)
    unsupported_use(
        node, fmt::format("{} pooling of {} values", attrs.get_string("pool"), to_string(type)));
  const TensorRef wide =
      ctx.add(OpType::Cast, {{"to", std::string("float32")}}, {x}, name + ".float");
  const TensorRef pooled = ctx.add(OpType::Pool2D, attrs, {wide}, name + ".pool");
  return ctx.add(OpType::Cast, {{"to", std::string(to_string(type))}}, {pooled}, name);
}

void map_pool(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  require_only_first_output(ctx, node);
  const TensorRef x = require_spatial(ctx, node);
  const Ints sizes = ctx.sizes(x);
  const std::size_t r = sizes.size() - 2;
  const Ints spatial(sizes.begin() + 2, sizes.end());
  if (!attr_ints(node, "kernel_shape")) unsupported_use(node, "kernel_shape is missing");
  const Ints kernel = spatial_list(node, "kernel_shape", r, {});
  const Ints strides = spatial_list(node, "strides", r, Ints(r, 1));
  const Ints dilations = spatial_list(node, "dilations", r, Ints(r, 1));
  const Ints pads = node_pads(ctx, node, sizes, kernel, strides, dilations);
  const Ints begin(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(r));
  Ints end(pads.begin() + static_cast<std::ptrdiff_t>(r), pads.end());
  const bool max = node.op_type() == "MaxPool";
  bool count_include_pad = !max && attr_int(node, "count_include_pad", 0) != 0;
  // A zero Pad folded into an average pool without padding of its own counts in the average.
  const Ints folded = ctx.extra_padding(node.input(0));
  if (!max && folded.size() == r) {
    bool own = false, any = false;
    for (std::size_t d = 0; d < r; ++d) {
      own = own || pads[d] != folded[d] || pads[d + r] != folded[d];
      any = any || folded[d] != 0;
    }
    count_include_pad = count_include_pad || (any && !own);
  }
  if (attr_int(node, "ceil_mode", 0) != 0) {
    const Ints ceil_end = ceil_mode_end_pads(spatial, kernel, strides, dilations, pads);
    // A partial window counting padding would divide by the part inside the given pads only.
    if (count_include_pad && ceil_end != end)
      unsupported_use(node,
                      "ceil_mode=1 with count_include_pad=1 (a last, partial window that counts "
                      "only part of its padding) is not supported");
    end = ceil_end;
  }
  Attributes attrs{{"pool", std::string(max ? "max" : "avg")},
                   {"kernel", kernel},
                   {"stride", strides},
                   {"padding", begin}};
  if (end != begin) attrs.set("padding_end", end);
  if (dilations != Ints(r, 1)) attrs.set("dilation", dilations);
  if (count_include_pad) attrs.set("count_include_pad", std::int64_t{1});
  ctx.bind_tensor(node.output(0), pool_of(ctx, node, attrs, x));
}

void map_global_pool(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef x = require_spatial(ctx, node);
  const Ints sizes = ctx.sizes(x);
  const Ints kernel(sizes.begin() + 2, sizes.end());
  const std::string pool = node.op_type() == "GlobalMaxPool" ? "max" : "avg";
  ctx.bind_tensor(node.output(0), pool_of(ctx, node,
                                          {{"pool", pool},
                                           {"kernel", kernel},
                                           {"stride", kernel},
                                           {"padding", Ints(kernel.size(), 0)}},
                                          x));
}

// What Conv and ConvTranspose read alike: x [N, C, spatial...], a weight of x's rank, and the
// window's kernel (default: the weight's spatial dims), strides and dilations per spatial dim.
struct WeightedWindow {
  TensorRef x;
  Ints sizes;
  std::size_t r = 0;  // spatial dims
  std::string w;
  Ints wdims, kernel, strides, dilations;
};

WeightedWindow read_weighted_window(ImportContext& ctx, const ::onnx::NodeProto& node) {
  WeightedWindow win;
  win.x = require_spatial(ctx, node);
  win.sizes = ctx.sizes(win.x);
  win.r = win.sizes.size() - 2;
  win.w = node.input(1);
  win.wdims = ctx.dims(win.w);
  if (win.wdims.size() != win.sizes.size())
    unsupported_use(node, fmt::format("weight shape {} does not have the input's rank {}",
                                      format_dims(win.wdims), win.sizes.size()));
  win.kernel =
      spatial_list(node, "kernel_shape", win.r, Ints(win.wdims.begin() + 2, win.wdims.end()));
  win.strides = spatial_list(node, "strides", win.r, Ints(win.r, 1));
  win.dilations = spatial_list(node, "dilations", win.r, Ints(win.r, 1));
  return win;
}

// ConvTranspose: x [N, C, spatial...], W [C, O/group, k...] (our layout too), optional B [O].
// ONNX's begin and end pads become our symmetric `padding` (the begins) and an `output_padding`
// that absorbs the difference (output_padding + begin - end; negative trims trailing outputs);
// output_shape and auto_pad SAME_* resolve to pads as ONNX's reference does.
void map_conv_transpose(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const WeightedWindow win = read_weighted_window(ctx, node);
  const TensorRef x = win.x;
  const Ints& sizes = win.sizes;
  const std::size_t r = win.r;
  const std::string& w = win.w;
  const Ints& wdims = win.wdims;
  const Ints& kernel = win.kernel;
  const Ints& strides = win.strides;
  const Ints& dilations = win.dilations;
  Ints out_pad = ints_or(node, "output_padding", Ints(r, 0));
  if (out_pad.size() != r)
    unsupported_use(node, fmt::format("output_padding {} must have one entry per spatial dim",
                                      format_dims(out_pad)));
  const std::int64_t groups = attr_int(node, "group", 1);
  const std::string auto_pad = attr_string(node, "auto_pad", "NOTSET");
  Ints pads(2 * r, 0);
  const auto output_shape = attr_ints(node, "output_shape");
  if (output_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    Ints target(r);
    if (output_shape) {
      // [spatial...] or, as some exporters write it, [N, C, spatial...].
      Ints shape = *output_shape;
      if (shape.size() == r + 2) shape.erase(shape.begin(), shape.begin() + 2);
      if (shape.size() != r)
        unsupported_use(node, fmt::format("output_shape {} does not name the {} spatial dims",
                                          format_dims(*output_shape), r));
      target = shape;
    } else {
      for (std::size_t d = 0; d < r; ++d) target[d] = sizes[2 + d] * strides[d];
    }
    for (std::size_t d = 0; d < r; ++d) {
      const std::int64_t total = strides[d] * (sizes[2 + d] - 1) + out_pad[d] +
                                 (kernel[d] - 1) * dilations[d] + 1 - target[d];
      if (total < 0) {
        // A larger output than the windows cover: the extra trailing entries hold the bias only.
        out_pad[d] -= total;
        continue;
      }
      const bool upper = auto_pad == "SAME_UPPER";
      pads[d] = upper ? total / 2 : total - total / 2;
      pads[d + r] = total - pads[d];
    }
  } else if (auto_pad == "NOTSET") {
    if (auto pad_attr = attr_ints(node, "pads")) {
      if (pad_attr->size() != 2 * r)
        unsupported_use(node, fmt::format("pads {} do not have two entries per spatial dim ({})",
                                          format_dims(*pad_attr), r));
      pads = *pad_attr;
    }
  } else if (auto_pad != "VALID") {
    unsupported_use(node, fmt::format("auto_pad {} is not supported", auto_pad));
  }
  Ints padding(r), output_padding(r);
  for (std::size_t d = 0; d < r; ++d) {
    padding[d] = pads[d];
    output_padding[d] = out_pad[d] + pads[d] - pads[d + r];
    if (pads[d] < 0)
      unsupported_use(node, fmt::format("negative pads {} are not supported", format_dims(pads)));
  }
  const std::int64_t out_channels = wdims[1] * groups;
  std::vector<TensorRef> inputs{x, ctx.tensor(w)};
  if (!input_name(node, 2).empty())
    inputs.push_back(ctx.weight(input_name(node, 2), {out_channels}));
  Attributes attrs{{"out_channels", out_channels},
                   {"kernel", kernel},
                   {"stride", strides},
                   {"padding", padding},
                   {"dilation", dilations}};
  if (output_padding != Ints(r, 0)) attrs.set("output_padding", output_padding);
  if (groups != 1) attrs.set("groups", groups);
  ctx.bind_tensor(node.output(0),
                  ctx.add(OpType::ConvTranspose, std::move(attrs), inputs, node_name(node)));
}

void map_batch_norm(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  require_only_first_output(ctx, node);
  const TensorRef x = activation(ctx, node, 0);
  const Ints sizes = ctx.sizes(x);
  if (sizes.size() < 2) unsupported_use(node, "BatchNormalization needs an input of rank >= 2");
  const std::int64_t channels = sizes[1];
  // Running mean and variance are statistics, not trained parameters: only scale and bias remain.
  ctx.bind_tensor(
      node.output(0),
      ctx.add(OpType::BatchNorm, {{"epsilon", attr_float(node, "epsilon", 1e-5)}},
              {x, ctx.weight(node.input(1), {channels}), ctx.weight(node.input(2), {channels})},
              node_name(node)));
}

void map_layer_norm(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  require_only_first_output(ctx, node);
  const TensorRef x = activation(ctx, node, 0);
  const Ints sizes = ctx.sizes(x);
  const auto rank = static_cast<std::int64_t>(sizes.size());
  const int axis = normalize_axis(attr_int(node, "axis", -1), rank);
  const Ints normalized(sizes.begin() + axis, sizes.end());
  const Attributes attrs{{"normalized_dims", rank - axis},
                         {"epsilon", attr_float(node, "epsilon", 1e-5)}};
  const std::string name = node_name(node);
  const TensorRef scale = ctx.weight(node.input(1), normalized);
  if (const std::string& b = input_name(node, 2); !b.empty()) {
    ctx.bind_tensor(node.output(0),
                    ctx.add(OpType::LayerNorm, attrs, {x, scale, ctx.weight(b, normalized)}, name));
    return;
  }
  // Our LayerNorm takes gamma and beta together or neither: without a bias, the scale is a Mul.
  const TensorRef normalized_x = ctx.add(OpType::LayerNorm, attrs, {x}, name);
  ctx.bind_tensor(node.output(0), ctx.add(OpType::Mul, {}, {normalized_x, scale}, name + ".scale"));
}

// Whether `value` is a folded constant (not a parameter of the model) whose every value is `v`.
bool folded_constant_of(ImportContext& ctx, const std::string& value, double v) {
  if (value.empty() || ctx.is_parameter(value) || !ctx.is_constant(value)) return false;
  const ConstTensor& c = ctx.constant(value);
  for (std::int64_t i = 0; i < c.numel(); ++i)
    if (c.as_double(i) != v) return false;
  return true;
}

// A [k] scale or bias seen as `view` (e.g. [C, 1...], which broadcasts over the spatial dims): a
// Weight of that shape, or a Reshape where the model feeds it as an input.
TensorRef affine_operand(ImportContext& ctx, const std::string& value, const Ints& view,
                         const std::string& name) {
  return ctx.is_tensor(value) ? ctx.reshape(ctx.tensor(value), view, name)
                              : ctx.weight(value, view);
}

// [C, 1...] for an input of `sizes` [n, C, ...].
Ints per_channel(const Ints& sizes) {
  Ints v(sizes.size() - 1, 1);
  v[0] = sizes[1];
  return v;
}

// InstanceNormalization normalises each (sample, channel) over the spatial dims: our LayerNorm over
// the trailing rank - 2 dims, then the per-channel scale and bias as a Mul and an Add of [C, 1...]
// Weights. torch exports GroupNorm this way (a Reshape to [n, groups, -1], InstanceNormalization
// with a constant scale of ones and bias of zeros, a Reshape back, then the affine Mul and Add);
// constant ones and zeros are no parameters and are left out.
void map_instance_norm(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  require_only_first_output(ctx, node);
  const TensorRef x = activation(ctx, node, 0);
  const Ints sizes = ctx.sizes(x);
  const auto rank = static_cast<std::int64_t>(sizes.size());
  if (rank < 3) unsupported_use(node, "InstanceNormalization needs an input of rank >= 3");
  const std::string name = node_name(node);
  TensorRef y = ctx.add(
      OpType::LayerNorm,
      {{"normalized_dims", rank - 2}, {"epsilon", attr_float(node, "epsilon", 1e-5)}}, {x}, name);
  const std::string& scale = input_name(node, 1);
  const std::string& bias = input_name(node, 2);
  if (scale.empty() || bias.empty()) unsupported_use(node, "scale and B are required");
  const Ints view = per_channel(sizes);
  if (!folded_constant_of(ctx, scale, 1.0))
    y = ctx.add(OpType::Mul, {}, {y, affine_operand(ctx, scale, view, name + ".scale_view")},
                name + ".scale");
  if (!folded_constant_of(ctx, bias, 0.0))
    y = ctx.add(OpType::Add, {}, {y, affine_operand(ctx, bias, view, name + ".bias_view")},
                name + ".bias");
  ctx.bind_tensor(node.output(0), y);
}

// GroupNormalization (opset 18; 21 changed the scale and bias from one per group to one per
// channel): x [n, C, ...] seen as [n, groups, rest], our LayerNorm over `rest`, seen back, then
// the affine Mul and Add, per group on the grouped view before opset 21, per channel after.
void map_group_norm(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  require_only_first_output(ctx, node);
  const TensorRef x = activation(ctx, node, 0);
  const Ints sizes = ctx.sizes(x);
  const auto rank = static_cast<std::int64_t>(sizes.size());
  if (rank < 3) unsupported_use(node, "GroupNormalization needs an input of rank >= 3");
  const std::int64_t groups = attr_int(node, "num_groups", 0);
  if (groups < 1 || sizes[1] % groups != 0)
    unsupported_use(node,
                    fmt::format("num_groups {} does not divide the {} channels", groups, sizes[1]));
  const std::string& scale = input_name(node, 1);
  const std::string& bias = input_name(node, 2);
  if (scale.empty() || bias.empty()) unsupported_use(node, "scale and bias are required");
  const std::string name = node_name(node);
  const std::int64_t rest = product(sizes) / (sizes[0] * groups);
  TensorRef y = ctx.add(
      OpType::LayerNorm,
      {{"normalized_dims", std::int64_t{1}}, {"epsilon", attr_float(node, "epsilon", 1e-5)}},
      {ctx.reshape(x, {sizes[0], groups, rest}, name + ".groups")}, name);
  const bool per_group = opset < 21;
  const Ints view = per_group ? Ints{groups, 1} : per_channel(sizes);
  auto affine = [&](const std::string& value, OpType type, const std::string& suffix) {
    y = ctx.add(type, {}, {y, affine_operand(ctx, value, view, name + suffix + "_view")},
                name + suffix);
  };
  if (per_group) {
    affine(scale, OpType::Mul, ".scale");
    affine(bias, OpType::Add, ".bias");
    y = ctx.reshape(y, sizes, name + ".ungroup");
  } else {
    y = ctx.reshape(y, sizes, name + ".ungroup");
    affine(scale, OpType::Mul, ".scale");
    affine(bias, OpType::Add, ".bias");
  }
  ctx.bind_tensor(node.output(0), y);
}

}  // namespace

TensorRef emit_conv2d(ImportContext& ctx, const ::onnx::NodeProto& node,
                      const std::string& bias_value) {
  const WeightedWindow win = read_weighted_window(ctx, node);
  const Ints padding = node_padding(ctx, node, win.sizes, win.kernel, win.strides, win.dilations);
  const std::int64_t out_channels = win.wdims[0];
  std::vector<TensorRef> inputs{win.x, ctx.tensor(win.w)};
  const std::string& bias = bias_value.empty() ? input_name(node, 2) : bias_value;
  if (!bias.empty()) inputs.push_back(ctx.weight(bias, {out_channels}));
  return ctx.add(OpType::Conv2D,
                 {{"out_channels", out_channels},
                  {"kernel", win.kernel},
                  {"stride", win.strides},
                  {"padding", padding},
                  {"dilation", win.dilations},
                  {"groups", attr_int(node, "group", 1)}},
                 inputs, node_name(node));
}

static void register_dense_ops(OnnxImports& table) {
  table["MatMul"] = map_matmul;
  table["Gemm"] = map_gemm;
  table["Conv"] = map_conv;
  table["MaxPool"] = map_pool;
  table["AveragePool"] = map_pool;
  table["GlobalAveragePool"] = map_global_pool;
  table["GlobalMaxPool"] = map_global_pool;
  table["ConvTranspose"] = map_conv_transpose;
  table["BatchNormalization"] = map_batch_norm;
  table["LayerNormalization"] = map_layer_norm;
  table["InstanceNormalization"] = map_instance_norm;
  table["GroupNormalization"] = map_group_norm;
}

UNITY_REGISTER_ONNX_IMPORTS(register_dense_ops)

}  // namespace unity::onnxio
