// Data movement: Reshape, Flatten, Squeeze/Unsqueeze (as Reshape), Transpose, Concat, Split,
// Slice and Gather of activations (as Split pieces), Gather of a weight (Embedding), Expand (of an
// activation or of a parameter, e.g. ViT's class token repeated for every image).
#include <fmt/format.h>

#include <algorithm>

#include "onnx/constant_folding.h"
#include "onnx/onnx_op_mapping.h"
#include "unity/core/errors.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

Ints axes_input_or_attr(ImportContext& ctx, const ::onnx::NodeProto& node) {
  if (auto attr = attr_ints(node, "axes")) return *attr;
  const std::string& axes = input_name(node, 1);
  return axes.empty() ? Ints{} : ctx.constant(axes).to_ints();
}

void map_reshape(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef x = ctx.tensor(node.input(0));
  Ints target;
  if (auto attr = attr_ints(node, "shape"))
    target = *attr;  // opset < 5
  else
    target = ctx.constant(node.input(1)).to_ints();
  const Ints sizes = resolve_reshape(ctx.sizes(x), target, attr_int(node, "allowzero", 0) != 0);
  ctx.bind_tensor(node.output(0), ctx.reshape(x, sizes, node_name(node)));
}

void map_squeeze(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef x = ctx.tensor(node.input(0));
  const Ints axes = axes_input_or_attr(ctx, node);
  const Ints sizes = node.op_type() == "Squeeze" ? squeeze_dims(ctx.sizes(x), axes)
                                                 : unsqueeze_dims(ctx.sizes(x), axes);
  ctx.bind_tensor(node.output(0), ctx.reshape(x, sizes, node_name(node)));
}

void map_flatten(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef x = ctx.tensor(node.input(0));
  const Ints sizes = ctx.sizes(x);
  const auto rank = static_cast<std::int64_t>(sizes.size());
  // Our Flatten is ONNX's: [prod(dims before axis), prod(the rest)].
  const int axis = flatten_axis(attr_int(node, "axis", 1), rank);
  const Ints head(sizes.begin(), sizes.begin() + axis);
  const Ints tail(sizes.begin() + axis, sizes.end());
  if (Ints{product(head), product(tail)} == sizes) {
    ctx.bind_tensor(node.output(0), x);
    return;
  }
  ctx.bind_tensor(node.output(0),
                  ctx.add(OpType::Flatten, {{"axis", std::int64_t{axis}}}, {x}, node_name(node)));
}

void map_transpose(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef x = ctx.tensor(node.input(0));
  const auto rank = static_cast<std::int64_t>(ctx.sizes(x).size());
  Ints perm = attr_ints(node, "perm").value_or(Ints{});
  if (perm.empty()) {
    for (std::int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  for (auto& p : perm) p = normalize_axis(p, rank);
  Ints identity(static_cast<std::size_t>(rank));
  for (std::int64_t d = 0; d < rank; ++d) identity[static_cast<std::size_t>(d)] = d;
  if (perm == identity) {
    ctx.bind_tensor(node.output(0), x);
    return;
  }
  ctx.bind_tensor(node.output(0),
                  ctx.add(OpType::Transpose, {{"perm", perm}}, {x}, node_name(node)));
}

void map_concat(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  std::vector<TensorRef> inputs;
  for (const auto& input : node.input()) {
    if (input.empty()) continue;
    if (product(ctx.dims(input)) == 0) continue;  // exporters concatenate empty tensors harmlessly
    inputs.push_back(ctx.tensor(input));
  }
  if (inputs.empty()) unsupported_use(node, "every input is empty");
  if (inputs.size() == 1) {
    ctx.bind_tensor(node.output(0), inputs.front());
    return;
  }
  const auto rank = static_cast<std::int64_t>(ctx.sizes(inputs.front()).size());
  const int axis = normalize_axis(attr_int(node, "axis", 0), rank);
  ctx.bind_tensor(node.output(0),
                  ctx.add(OpType::Concat, {{"axis", std::int64_t{axis}}}, inputs, node_name(node)));
}

void map_split(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  const TensorRef x = ctx.tensor(node.input(0));
  const Ints dims = ctx.sizes(x);
  const int axis =
      normalize_axis(attr_int(node, "axis", 0), static_cast<std::int64_t>(dims.size()));
  const std::int64_t extent = dims[static_cast<std::size_t>(axis)];
  const std::string& split_input = input_name(node, 1);
  const Ints sizes =
      split_sizes(node, extent, opset, split_input.empty() ? nullptr : &ctx.constant(split_input));
  if (sizes.size() == 1) {
    ctx.bind_tensor(node.output(0), x);
    return;
  }
  const NodeId split = ctx.add_node(OpType::Split, {{"axis", std::int64_t{axis}}, {"sizes", sizes}},
                                    {x}, node_name(node));
  for (int i = 0; i < node.output_size(); ++i) {
    if (!node.output(i).empty()) ctx.bind_tensor(node.output(i), TensorRef{split, i});
  }
}

void map_slice(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  TensorRef x = ctx.tensor(node.input(0));
  const Ints dims = ctx.sizes(x);
  const auto rank = static_cast<std::int64_t>(dims.size());
  Ints starts, ends, axes, steps;
  if (opset < 10) {
    starts = attr_ints(node, "starts").value_or(Ints{});
    ends = attr_ints(node, "ends").value_or(Ints{});
    axes = attr_ints(node, "axes").value_or(Ints{});
  } else {
    starts = ctx.constant(node.input(1)).to_ints();
    ends = ctx.constant(node.input(2)).to_ints();
    if (const std::string& a = input_name(node, 3); !a.empty()) axes = ctx.constant(a).to_ints();
    if (const std::string& s = input_name(node, 4); !s.empty()) steps = ctx.constant(s).to_ints();
  }
  if (axes.empty()) {
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  }
  const std::string name = node_name(node);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const std::int64_t step = steps.empty() ? 1 : steps[i];
    if (step < 1)
      unsupported_use(node, "Slice of an activation with a negative step is not supported");
    const int axis = normalize_axis(axes[i], rank);
    const Ints now = ctx.sizes(x);
    const std::int64_t extent = now[static_cast<std::size_t>(axis)];
    auto clamp = [extent](std::int64_t v) {
      return std::clamp<std::int64_t>(v < 0 ? v + extent : v, 0, extent);
    };
    const std::int64_t start = clamp(starts[i]);
    const std::int64_t end = clamp(ends[i]);
    const std::string part = axes.size() == 1 ? name : fmt::format("{}.axis{}", name, axis);
    if (step == 1) {
      x = ctx.slice(x, axis, start, end, part);
      continue;
    }
    // Every step-th element (Swin's patch merging, x[:, 0::2, 1::2]): a window of count x step
    // elements holding them, seen as [count, step], and one column of it. When the window would
    // pass the end, the last element comes on its own and is concatenated.
    const std::int64_t count = end > start ? (end - start + step - 1) / step : 0;
    if (count == 0)
      unsupported_use(node, fmt::format("Slice [{}:{}:{}] of a dimension of {} is empty", start,
                                        end, step, extent));
    auto strided = [&](std::int64_t n, const std::string& label) {
      const std::int64_t window = std::min(start, extent - n * step);
      Ints split = now;
      split[static_cast<std::size_t>(axis)] = n;
      split.insert(split.begin() + axis + 1, step);
      TensorRef t = ctx.slice(x, axis, window, window + n * step, label + ".window");
      t = ctx.reshape(t, split, label + ".split");
      t = ctx.slice(t, axis + 1, start - window, start - window + 1, label + ".column");
      Ints out = now;
      out[static_cast<std::size_t>(axis)] = n;
      return ctx.reshape(t, out, label);
    };
    if (count * step <= extent) {
      x = strided(count, part);
      continue;
    }
    const std::int64_t last = start + (count - 1) * step;
    const TensorRef tail = ctx.slice(x, axis, last, last + 1, part + ".last");
    x = count == 1 ? tail
                   : ctx.add(OpType::Concat, {{"axis", std::int64_t{axis}}},
                             {strided(count - 1, part + ".head"), tail}, part);
  }
  ctx.bind_tensor(node.output(0), x);
}

// Gather by indices computed in the model: data seen as [pre, n, post], the indices as [1, m, 1]
// broadcast to [pre, m, post], a GatherElements along the middle axis, and the result seen as
// data's dims with the indices' dims in place of the axis.
TensorRef gather_by_computed_indices(ImportContext& ctx, const ::onnx::NodeProto& node, int axis) {
  const std::string name = node_name(node);
  const Ints d = ctx.dims(node.input(0));
  const std::string& indices = node.input(1);
  if (!is_integer_elem_type(ctx.elem_type(indices)))
    unsupported_use(node, "the indices are not integers");
  const Ints idims = ctx.dims(indices);
  const std::int64_t pre = product(Ints(d.begin(), d.begin() + axis));
  const std::int64_t post = product(Ints(d.begin() + axis + 1, d.end()));
  const std::int64_t m = product(idims);
  const TensorRef data = ctx.reshape(
      ctx.tensor(node.input(0)), {pre, d[static_cast<std::size_t>(axis)], post}, name + ".data");
  TensorRef idx = ctx.reshape(ctx.tensor(indices), {1, m, 1}, name + ".indices");
  if (pre != 1 || post != 1)
    idx = ctx.add(OpType::Expand, {{"shape", Ints{pre, m, post}}}, {idx}, name + ".broadcast");
  const TensorRef y =
      ctx.add(OpType::GatherElements, {{"axis", std::int64_t{1}}}, {data, idx}, name);
  Ints out(d.begin(), d.begin() + axis);
  out.insert(out.end(), idims.begin(), idims.end());
  out.insert(out.end(), d.begin() + axis + 1, d.end());
  return ctx.reshape(y, out, name + ".shape");
}

void map_gather(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const std::string& data = node.input(0);
  const std::string& indices = node.input(1);
  const std::string name = node_name(node);
  const Ints data_dims = ctx.dims(data);
  const int axis =
      normalize_axis(attr_int(node, "axis", 0), static_cast<std::int64_t>(data_dims.size()));
  if (ctx.is_constant(data)) {
    // Rows of a weight table picked by token ids: an embedding lookup.
    if (data_dims.size() != 2 || axis != 0) {
      unsupported_use(
          node, fmt::format("Gather from a constant of shape {} along axis {} (only row lookups "
                            "in a 2-D table become Embedding)",
                            format_dims(data_dims), axis));
    }
    if (!is_integer_elem_type(ctx.elem_type(indices)))
      unsupported_use(node, "the indices are not integers");
    ctx.bind_tensor(
        node.output(0),
        ctx.add(OpType::Embedding, {{"num_entries", data_dims[0]}, {"embedding_dim", data_dims[1]}},
                {ctx.tensor(indices), ctx.tensor(data)}, name));
    return;
  }
  if (!ctx.is_constant(indices)) {
    // Picking integers by computed indices (GatherElements) has no integer kernel; by constant
    // indices (a routing's k-th expert, `chosen[:, i]`) it is a slice, which moves any type.
    if (is_integer_elem_type(ctx.elem_type(data)))
      unsupported_use(node, "Gather of an integer activation by computed indices is not supported");
    ctx.bind_tensor(node.output(0), gather_by_computed_indices(ctx, node, axis));
    return;
  }
  const ConstTensor& index = ctx.constant(indices);
  const Ints picks = index.to_ints();
  const std::int64_t extent = data_dims[static_cast<std::size_t>(axis)];
  // Runs of consecutive indices, each a piece [start, end) of a Split, concatenated.
  std::vector<std::pair<std::int64_t, std::int64_t>> runs;
  for (std::int64_t raw : picks) {
    const std::int64_t p = raw < 0 ? raw + extent : raw;
    if (p < 0 || p >= extent)
      unsupported_use(node, fmt::format("index {} lies outside [-{}, {})", raw, extent, extent));
    if (!runs.empty() && runs.back().second == p)
      ++runs.back().second;
    else
      runs.push_back({p, p + 1});
  }
  constexpr std::size_t kMaxRuns = 64;
  if (runs.empty() || runs.size() > kMaxRuns)
    unsupported_use(node, fmt::format("Gather of an activation by {} constant indices in {} runs "
                                      "(supported: 1 to {} runs of consecutive indices)",
                                      picks.size(), runs.size(), kMaxRuns));
  TensorRef picked;
  if (runs.size() == 1) {
    picked = ctx.slice(ctx.tensor(data), axis, runs[0].first, runs[0].second, name);
  } else {
    std::vector<TensorRef> pieces;
    for (std::size_t r = 0; r < runs.size(); ++r)
      pieces.push_back(ctx.slice(ctx.tensor(data), axis, runs[r].first, runs[r].second,
                                 fmt::format("{}.run{}", name, r)));
    picked = ctx.add(OpType::Concat, {{"axis", std::int64_t{axis}}}, pieces, name);
  }
  // The index's dims replace the axis (none for a scalar index, which drops it).
  Ints out(data_dims.begin(), data_dims.begin() + axis);
  out.insert(out.end(), index.dims.begin(), index.dims.end());
  out.insert(out.end(), data_dims.begin() + axis + 1, data_dims.end());
  ctx.bind_tensor(node.output(0), ctx.reshape(picked, out, name + ".squeeze"));
}

void map_expand(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef x = ctx.tensor(node.input(0));
  const Ints target = broadcast_dims(ctx.sizes(x), ctx.constant(node.input(1)).to_ints());
  if (target == ctx.sizes(x)) {
    ctx.bind_tensor(node.output(0), x);
    return;
  }
  ctx.bind_tensor(node.output(0),
                  ctx.add(OpType::Expand, {{"shape", target}}, {x}, node_name(node)));
}

void map_pad(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  const TensorRef x = ctx.tensor(node.input(0));
  const Ints dims = ctx.sizes(x);
  const std::string mode = attr_string(node, "mode", "constant");
  Ints pads;
  if (opset < 11)
    pads = attr_ints(node, "pads").value_or(Ints{});
  else
    pads = ctx.constant(node.input(1)).to_ints();
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    unsupported_use(node, fmt::format("Pad mode '{}' is not supported (constant, reflect and "
                                      "edge are)",
                                      mode));
  if (pads.size() % 2 != 0)
    unsupported_use(node, fmt::format("pads {} must hold a begin and an end per padded axis",
                                      format_dims(pads)));
  const std::string& axes_input = input_name(node, 3);
  if (!axes_input.empty()) {
    // Opset 18: pads for the listed axes only; spread them over every dim.
    if (!ctx.is_constant(axes_input)) unsupported_use(node, "Pad's axes input must be a constant");
    const Ints axes = ctx.constant(axes_input).to_ints();
    const auto rank = static_cast<std::int64_t>(dims.size());
    if (pads.size() != 2 * axes.size())
      unsupported_use(node, fmt::format("pads {} must hold 2 values per axis of {}",
                                        format_dims(pads), format_dims(axes)));
    Ints full(2 * dims.size(), 0);
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const auto a = static_cast<std::size_t>(normalize_axis(axes[i], rank));
      full[a] = pads[i];
      full[a + dims.size()] = pads[i + axes.size()];
    }
    pads = full;
  }
  if (pads.size() != 2 * dims.size())
    unsupported_use(node, fmt::format("pads {} must hold 2 values per dim of {}", format_dims(pads),
                                      format_dims(dims)));
  double value = 0.0;
  if (opset < 11) {
    value = attr_float(node, "value", 0.0f);
  } else if (!input_name(node, 2).empty()) {
    if (!ctx.is_constant(node.input(2)))
      unsupported_use(node, "Pad's constant_value input must be a constant");
    value = ctx.constant(node.input(2)).scalar();
  }
  if (std::all_of(pads.begin(), pads.end(), [](std::int64_t p) { return p == 0; })) {
    ctx.bind_tensor(node.output(0), x);
    return;
  }
  // Exporters write a padded AvgPool (and TF-style convolutions) as Pad + pool; our Conv2D and
  // Pool2D pad symmetrically themselves, so a spatial Pad that only feeds them folds into them.
  // pads are [begins..., ends...] of x [N, C, spatial...] with 1 to 3 spatial dims.
  const std::size_t rank = dims.size();
  bool spatial_symmetric = rank >= 3 && rank <= 5 && pads.size() == 2 * rank && pads[0] == 0 &&
                           pads[1] == 0 && pads[rank] == 0 && pads[rank + 1] == 0;
  Ints spatial_pads;
  for (std::size_t d = 2; spatial_symmetric && d < rank; ++d) {
    spatial_symmetric = pads[d] == pads[rank + d];
    spatial_pads.push_back(pads[d]);
  }
  bool consumers_pad = !ctx.model().is_graph_output(node.output(0));
  for (const auto& use : ctx.model().consumers(node.output(0))) {
    const auto& consumer = ctx.model().node(use.node);
    const std::string& type = consumer.op_type();
    consumers_pad = consumers_pad && use.slot == 0 && is_default_domain(consumer) &&
                    (type == "Conv" || type == "AveragePool" || type == "MaxPool");
  }
  if (mode == "constant" && value == 0.0 && spatial_symmetric && consumers_pad) {
    ctx.bind_tensor(node.output(0), x);
    ctx.set_extra_padding(node.output(0), spatial_pads);
    return;
  }
  // Any other Pad is an operator of its own.
  if (mode != "constant")
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (pads[d] < 0 || pads[d + dims.size()] < 0)
        unsupported_use(node, fmt::format("negative pads {} (cropping) are supported in constant "
                                          "mode only, not {}",
                                          format_dims(pads), mode));
      if (dims[d] == 0 && pads[d] + pads[d + dims.size()] > 0)
        unsupported_use(node,
                        fmt::format("dim {} is empty: {} mode has nothing to repeat", d, mode));
    }
  Attributes attrs{{"pads", pads}};
  if (mode != "constant") attrs.set("mode", mode);
  if (value != 0.0) attrs.set("value", value);
  ctx.bind_tensor(node.output(0), ctx.add(OpType::Pad, std::move(attrs), {x}, node_name(node)));
}

}  // namespace

static void register_layout_ops(OnnxImports& table) {
  table["Reshape"] = map_reshape;
  table["Squeeze"] = map_squeeze;
  table["Unsqueeze"] = map_squeeze;
  table["Flatten"] = map_flatten;
  table["Transpose"] = map_transpose;
  table["Concat"] = map_concat;
  table["Split"] = map_split;
  table["Slice"] = map_slice;
  table["Gather"] = map_gather;
  table["Expand"] = map_expand;
  table["Pad"] = map_pad;
}

UNITY_REGISTER_ONNX_IMPORTS(register_layout_ops)

}  // namespace unity::onnxio
