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
  Ints sizes;
  if (auto attr = attr_ints(node, "split"); attr && opset < 13)
    sizes = *attr;
  else if (const std::string& s = input_name(node, 1); !s.empty())
    sizes = ctx.constant(s).to_ints();
  if (sizes.empty()) {
    // Equal pieces, the last one smaller when the extent does not divide (opset 18 num_outputs).
    const std::int64_t parts = attr_int(node, "num_outputs", node.output_size());
    const std::int64_t piece = (extent + parts - 1) / parts;
    for (std::int64_t i = 0; i < parts; ++i) sizes.push_back(std::min(piece, extent - i * piece));
  }
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
    unsupported_use(node, "Gather of an activation by computed indices is not supported");
  }
  const ConstTensor& index = ctx.constant(indices);
  const Ints picks = index.to_ints();
  const std::int64_t extent = data_dims[static_cast<std::size_t>(axis)];
  const std::int64_t first =
      picks.empty() ? 0 : (picks.front() < 0 ? picks.front() + extent : picks.front());
  for (std::size_t i = 0; i < picks.size(); ++i) {
    const std::int64_t p = picks[i] < 0 ? picks[i] + extent : picks[i];
    if (p != first + static_cast<std::int64_t>(i) || index.dims.size() > 1) {
      unsupported_use(
          node, "Gather of an activation is supported for one index or a contiguous range only");
    }
  }
  // Index i of axis a is the piece [i, i+1) of a Split; a scalar index also drops the axis.
  const TensorRef piece = ctx.slice(ctx.tensor(data), axis, first,
                                    first + static_cast<std::int64_t>(picks.size()), name);
  if (!index.dims.empty()) {
    ctx.bind_tensor(node.output(0), piece);
    return;
  }
  Ints out = data_dims;
  out.erase(out.begin() + axis);
  ctx.bind_tensor(node.output(0), ctx.reshape(piece, out, name + ".squeeze"));
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
  if (!input_name(node, 3).empty())
    unsupported_use(node, "Pad with an axes input is not supported");
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
  if (mode != "constant" || !spatial_symmetric || !consumers_pad) {
    unsupported_use(
        node, fmt::format("Pad ({} mode, pads {}) is supported only as symmetric zero padding of "
                          "the spatial dims before Conv or pooling",
                          mode, format_dims(pads)));
  }
  ctx.bind_tensor(node.output(0), x);
  ctx.set_extra_padding(node.output(0), spatial_pads);
}

}  // namespace

void register_layout_ops(std::map<std::string, OpHandler>& table) {
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

}  // namespace unity::onnxio
