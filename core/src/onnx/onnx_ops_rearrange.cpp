// Operators that rearrange, repeat or mask an activation, written with operators the PCG has, so
// that they train and split as those do:
// - DepthToSpace (DCR, CRD) and SpaceToDepth, as PyTorch's PixelShuffle and PixelUnshuffle export
//   them: a Reshape to 6 dims, a Transpose and a Reshape back, which is ONNX's own definition. N, H
//   and W stay dims of their own (H and W the outer dim of each H x block group), so a split of
//   any of them passes all three operators; a channel split passes where the channels being
//   split are outermost (CRD's output channels).
// - Tile with constant repeats: a size-1 dim before each repeated one, an Expand of it to the
//   repeat count, and a Reshape that merges the two. Expand's gradient sums the copies.
// - Trilu: the Trilu operator on the matrix flattened into one axis (core/src/ops/trilu.cpp); an
//   integer matrix (a mask) is cast to float32 around it, exact up to 2^24.
// - ReverseSequence with constant sequence lengths: a GatherElements along the time axis by a
//   Constant index tensor of x's shape (position t of sample b reads len[b] - 1 - t within its
//   length, t itself after it); the gradient scatters back through GatherElements.
// - MeanVarianceNormalization: (x - mean) / (sqrt(mean((x - mean)^2)) + 1e-9) over its axes,
//   with ReduceMean, Sub, Mul, Sqrt, ScalarAdd and Div (ONNX writes the variance as
//   E[x^2] - E[x]^2, equal and less exact).
#include <fmt/format.h>

#include <algorithm>

#include "onnx/constant_folding.h"
#include "onnx/onnx_op_mapping.h"
#include "unity/core/errors.h"
#include "unity/core/pcg/data_type.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

std::int64_t block_size(const ::onnx::NodeProto& node) {
  const std::int64_t b = attr_int(node, "blocksize", 0);
  if (b < 1) unsupported_use(node, fmt::format("blocksize {} is not a positive number", b));
  return b;
}

Ints nchw(ImportContext& ctx, const ::onnx::NodeProto& node, TensorRef x) {
  const Ints s = ctx.sizes(x);
  if (s.size() != 4)
    unsupported_use(node, fmt::format("its input has shape {}, not [N, C, H, W]", format_dims(s)));
  return s;
}

TensorRef rearrange(ImportContext& ctx, TensorRef x, const Ints& split, const Ints& perm,
                    const Ints& merged, const std::string& name) {
  const TensorRef blocks = ctx.reshape(x, split, name + ".blocks");
  const TensorRef moved = ctx.add(OpType::Transpose, {{"perm", perm}}, {blocks}, name + ".move");
  return ctx.reshape(moved, merged, name);
}

void map_depth_to_space(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef x = ctx.tensor(node.input(0));
  const Ints s = nchw(ctx, node, x);
  const std::int64_t b = block_size(node), n = s[0], c = s[1], h = s[2], w = s[3];
  const std::string mode = attr_string(node, "mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    unsupported_use(node, fmt::format("mode \"{}\" is neither DCR nor CRD", mode));
  if (c % (b * b) != 0)
    unsupported_use(node,
                    fmt::format("{} channels are not a multiple of blocksize^2 = {}", c, b * b));
  if (b == 1) {
    ctx.bind_tensor(node.output(0), x);
    return;
  }
  const std::int64_t depth = c / (b * b);
  const std::string name = node_name(node);
  // DCR: channel (i * b + j) * depth + d; CRD: d * b * b + i * b + j. Either way the output is
  // [N, depth, H, i, W, j] merged.
  const bool dcr = mode == "DCR";
  const Ints split = dcr ? Ints{n, b, b, depth, h, w} : Ints{n, depth, b, b, h, w};
  const Ints perm = dcr ? Ints{0, 3, 4, 1, 5, 2} : Ints{0, 1, 4, 2, 5, 3};
  ctx.bind_tensor(node.output(0), rearrange(ctx, x, split, perm, {n, depth, h * b, w * b}, name));
}

void map_space_to_depth(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef x = ctx.tensor(node.input(0));
  const Ints s = nchw(ctx, node, x);
  const std::int64_t b = block_size(node), n = s[0], c = s[1], h = s[2], w = s[3];
  if (h % b != 0 || w % b != 0)
    unsupported_use(node,
                    fmt::format("H x W = {} x {} is not a multiple of blocksize {}", h, w, b));
  if (b == 1) {
    ctx.bind_tensor(node.output(0), x);
    return;
  }
  // Channel (i * b + j) * C + c of the output holds x[c, y * b + i, x * b + j].
  ctx.bind_tensor(node.output(0), rearrange(ctx, x, {n, c, h / b, b, w / b, b}, {0, 3, 5, 1, 2, 4},
                                            {n, c * b * b, h / b, w / b}, node_name(node)));
}

void map_tile(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef x = ctx.tensor(node.input(0));
  const Ints s = ctx.sizes(x);
  if (!ctx.is_constant(node.input(1)))
    unsupported_use(node, fmt::format("input '{}' sets the output's shape and is computed from the "
                                      "model's inputs: a data-dependent output shape, which a "
                                      "static plan cannot lay out",
                                      node.input(1)));
  const Ints repeats = ctx.constant(node.input(1)).to_ints();
  if (repeats.size() != s.size())
    unsupported_use(node,
                    fmt::format("{} repeats for an input of rank {}", repeats.size(), s.size()));
  // [.., 1, s_d, ..] expanded to [.., r_d, s_d, ..] for each repeated dim (a size-1 dim is
  // expanded in place), then merged.
  Ints split, expanded, tiled;
  for (std::size_t d = 0; d < s.size(); ++d) {
    const std::int64_t r = repeats[d];
    if (r < 1) unsupported_use(node, fmt::format("repeats[{}] = {} leaves the output empty", d, r));
    if (r > 1 && s[d] > 1) {
      split.push_back(1);
      expanded.push_back(r);
    }
    split.push_back(s[d]);
    expanded.push_back(r > 1 && s[d] == 1 ? r : s[d]);
    std::int64_t size = 0;
    if (__builtin_mul_overflow(s[d], r, &size))
      unsupported_use(node, fmt::format("repeats[{}] = {} is too large", d, r));
    tiled.push_back(size);
  }
  if (tiled == s) {
    ctx.bind_tensor(node.output(0), x);
    return;
  }
  const std::string name = node_name(node);
  const TensorRef spread = ctx.reshape(x, split, name + ".split");
  const TensorRef copies =
      ctx.add(OpType::Expand, {{"shape", expanded}}, {spread}, name + ".copies");
  ctx.bind_tensor(node.output(0), ctx.reshape(copies, tiled, name));
}

void map_trilu(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef x = ctx.tensor(node.input(0));
  const Ints s = ctx.sizes(x);
  if (s.size() < 2)
    unsupported_use(node, fmt::format("its input has rank {}, it needs a matrix", s.size()));
  std::int64_t k = 0;
  if (const std::string& kk = input_name(node, 1); !kk.empty()) {
    if (!ctx.is_constant(kk))
      unsupported_use(node, fmt::format("its k ('{}') must be a constant, and is computed from the "
                                        "model's inputs",
                                        kk));
    k = static_cast<std::int64_t>(ctx.constant(kk).scalar());
  }
  const std::int64_t rows = s[s.size() - 2], cols = s.back();
  Ints flat(s.begin(), s.end() - 2);
  flat.push_back(rows * cols);
  Attributes attrs{{"axis", static_cast<std::int64_t>(flat.size() - 1)},
                   {"rows", static_cast<double>(rows)}};
  if (attr_int(node, "upper", 1) == 0) attrs.set("upper", 0.0);
  if (k != 0) attrs.set("k", static_cast<double>(k));
  const std::string name = node_name(node);
  // An integer matrix (a mask of ones) passes through float32, exact up to 2^24.
  const DataType dtype = ctx.graph().shape(x).dtype;
  const bool integer = !is_floating(dtype);
  TensorRef matrix = ctx.reshape(x, flat, name + ".flatten");
  if (integer)
    matrix = ctx.add(OpType::Cast, {{"to", std::string("float32")}}, {matrix}, name + ".float");
  TensorRef kept = ctx.add(OpType::Trilu, attrs, {matrix}, name);
  if (integer)
    kept = ctx.add(OpType::Cast, {{"to", std::string(to_string(dtype))}}, {kept}, name + ".back");
  ctx.bind_tensor(node.output(0), ctx.reshape(kept, s, name + ".unflatten"));
}

void map_mean_variance_normalization(ImportContext& ctx, const ::onnx::NodeProto& node,
                                     std::int64_t) {
  const TensorRef x = ctx.tensor(node.input(0));
  const auto rank = static_cast<std::int64_t>(ctx.sizes(x).size());
  Ints axes;
  for (std::int64_t a : attr_ints(node, "axes").value_or(Ints{0, 2, 3}))
    axes.push_back(normalize_axis(a, rank));
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  const std::string name = node_name(node);
  const Attributes over{{"axes", axes}, {"keepdims", std::int64_t{1}}};
  const TensorRef mean = ctx.add(OpType::ReduceMean, over, {x}, name + ".mean");
  const TensorRef centered = ctx.add(OpType::Sub, {}, {x, mean}, name + ".centered");
  const TensorRef squares = ctx.add(OpType::Mul, {}, {centered, centered}, name + ".squares");
  const TensorRef variance = ctx.add(OpType::ReduceMean, over, {squares}, name + ".variance");
  const TensorRef deviation = ctx.add(OpType::Sqrt, {}, {variance}, name + ".deviation");
  const TensorRef denominator =
      ctx.add(OpType::ScalarAdd, {{"scalar", 1e-9}}, {deviation}, name + ".epsilon");
  ctx.bind_tensor(node.output(0), ctx.add(OpType::Div, {}, {centered, denominator}, name));
}

void map_reverse_sequence(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t) {
  const TensorRef x = ctx.tensor(node.input(0));
  const Ints dims = ctx.sizes(x);
  const auto rank = static_cast<std::int64_t>(dims.size());
  if (rank < 2)
    unsupported_use(node, fmt::format("the input {} has rank below 2", format_dims(dims)));
  const int time = normalize_axis(attr_int(node, "time_axis", 0), rank);
  const int batch = normalize_axis(attr_int(node, "batch_axis", 1), rank);
  if (time == batch || time > 1 || batch > 1)
    unsupported_use(
        node,
        fmt::format("time_axis {} and batch_axis {} must be 0 and 1 in some order", time, batch));
  const std::string& lengths_value = node.input(1);
  if (!ctx.is_constant(lengths_value))
    unsupported_use(node,
                    "sequence_lens computed from the inputs is not supported (the index "
                    "tensor must be known at import)");
  const Ints lengths = ctx.constant(lengths_value).to_ints();
  const auto b_size = dims[static_cast<std::size_t>(batch)];
  const auto t_size = dims[static_cast<std::size_t>(time)];
  if (static_cast<std::int64_t>(lengths.size()) != b_size)
    unsupported_use(node,
                    fmt::format("{} sequence lengths for a batch of {}", lengths.size(), b_size));
  for (std::int64_t l : lengths)
    if (l < 1 || l > t_size)
      unsupported_use(node, fmt::format("a sequence length {} outside [1, {}]", l, t_size));
  // The index of every element along the time axis; the dims after the first two repeat it.
  std::int64_t inner = 1;
  for (std::int64_t d = 2; d < rank; ++d) inner *= dims[static_cast<std::size_t>(d)];
  Ints index;
  index.reserve(static_cast<std::size_t>(t_size * b_size * inner));
  for (std::int64_t i0 = 0; i0 < dims[0]; ++i0)
    for (std::int64_t i1 = 0; i1 < dims[1]; ++i1) {
      const std::int64_t t = time == 0 ? i0 : i1;
      const std::int64_t len = lengths[static_cast<std::size_t>(time == 0 ? i1 : i0)];
      index.insert(index.end(), static_cast<std::size_t>(inner), t < len ? len - 1 - t : t);
    }
  const std::string name = ctx.fresh_constant(node_name(node) + ".order",
                                              ConstTensor::from_ints(std::move(index), dims));
  ctx.bind_tensor(node.output(0), ctx.add(OpType::GatherElements, {{"axis", std::int64_t{time}}},
                                          {x, ctx.tensor(name)}, node_name(node)));
}

}  // namespace

static void register_rearrange_ops(OnnxImports& table) {
  table["ReverseSequence"] = map_reverse_sequence;
  table["DepthToSpace"] = map_depth_to_space;
  table["SpaceToDepth"] = map_space_to_depth;
  table["Tile"] = map_tile;
  table["Trilu"] = map_trilu;
  table["MeanVarianceNormalization"] = map_mean_variance_normalization;
}

UNITY_REGISTER_ONNX_IMPORTS(register_rearrange_ops)

}  // namespace unity::onnxio
