// Conv2D, ConvTranspose and Pool2D on [N, C, spatial...] tensors with 1, 2 or 3 spatial dims
// (the operators keep their names whatever the rank). Sample and spatial degrees pass through
// (spatial partitions exchange halos at run time, which the cost model charges); convolution
// channels parallelise as a matrix multiplication does: output channels need a replicated input,
// input channels leave partial sums. A grouped convolution instead splits input and output channels
// together, by whole groups.
#include "shape_rules.h"
#include "unity/core/ops/window_attrs.h"

namespace unity::shape_rules {
namespace {

// `pad` before the dim and `pad_end` after it.
std::int64_t window_output(std::int64_t size, std::int64_t kernel, std::int64_t stride,
                           std::int64_t pad, std::int64_t pad_end, std::int64_t dilation,
                           const char* dim) {
  const std::int64_t span = dilation * (kernel - 1) + 1;
  const std::int64_t out = (size + pad + pad_end - span) / stride + 1;
  if (size + pad + pad_end < span || out < 1)
    fail("window of {} (kernel {}, dilation {}) does not fit the {} {} with padding {} and {}",
         span, kernel, dilation, dim, size, pad, pad_end);
  return out;
}

// The spatial rank r of x [N, C, spatial...]: 1, 2 or 3.
int spatial_rank(const ParallelTensorShape& x) {
  if (x.rank() < 3 || x.rank() > 5)
    fail("input 0 (x [N, C, spatial...]) must have rank 3, 4 or 5 (1 to 3 spatial dims), got {} {}",
         x.rank(), x.to_string());
  return x.rank() - 2;
}

const char* spatial_name(int r, int i) {
  static const char* names[3][3] = {
      {"length", "", ""}, {"height", "width", ""}, {"depth", "height", "width"}};
  return names[r - 1][i];
}

struct Window {
  std::vector<std::int64_t> kernel, stride, padding, dilation;
};

Window read_window(const Operator& op, int r, bool pool) {
  Window w;
  w.kernel = window_attr(op, "kernel", r, {});
  w.stride = window_attr(op, "stride", r, pool ? w.kernel : std::vector<std::int64_t>(r, 1));
  w.padding = window_attr(op, "padding", r, std::vector<std::int64_t>(r, 0));
  w.dilation = window_attr(op, "dilation", r, std::vector<std::int64_t>(r, 1));
  for (int i = 0; i < r; ++i) {
    expect_positive(w.kernel[i], "kernel");
    expect_positive(w.stride[i], "stride");
    expect_positive(w.dilation[i], "dilation");
    if (w.padding[i] < 0) fail("attribute 'padding' must not be negative");
  }
  return w;
}

Shapes infer_conv2d(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  const auto& w = in[1];
  check_activation(op);
  const int r = spatial_rank(x);
  expect_floating(x, "input 0 (x)");
  expect_rank(w, x.rank(), "input 1 (weight [O, C/groups, kernel...])");
  const std::int64_t out_c = op.attrs.get_int("out_channels");
  const std::int64_t groups = op.attrs.get_int("groups", 1);
  expect_positive(out_c, "out_channels");
  expect_positive(groups, "groups");
  const Window win = read_window(op, r, false);
  const std::int64_t c = x.dims[1].size;
  if (c % groups != 0 || out_c % groups != 0)
    fail("groups {} must divide input channels {} and out_channels {}", groups, c, out_c);
  const char* wname = "input 1 (weight [O, C/groups, kernel...])";
  expect_size(w, 0, out_c, wname);
  expect_size(w, 1, c / groups, wname);
  for (int i = 0; i < r; ++i) expect_size(w, 2 + i, win.kernel[i], wname);

  const int d_n = x.dims[0].degree;
  const int d_c = x.dims[1].degree;
  const int d_spatial = degree_product(x, 2, x.rank());
  const int d_o = w.dims[0].degree;
  for (int i = 0; i < r; ++i) expect_degree(w, 2 + i, 1, wname, "kernels are never split");
  int out_replica = 1;
  if (groups == 1) {
    expect_degree(w, 1, d_c, wname,
                  "the weight's input channels follow the input's channel degree");
    expect_replica(x, d_o, "input 0 (x)", "each output-channel partition reads the whole input");
    out_replica = d_c;
  } else {
    expect_degree(w, 1, 1, wname, "a grouped convolution splits whole groups");
    if (d_c != d_o)
      fail("grouped convolution: input channel degree {} must equal output channel degree {}", d_c,
           d_o);
    if (groups % d_c != 0) fail("channel degree {} does not divide groups {}", d_c, groups);
    expect_replica(x, 1, "input 0 (x)", "group partitions read disjoint channels");
  }
  expect_replica(w, d_n * d_spatial, wname, "one copy per sample and spatial partition");
  if (in.size() == 3) {
    const auto& b = in[2];
    expect_rank(b, 1, "input 2 (bias)");
    expect_size(b, 0, out_c, "input 2 (bias)");
    expect_degree(b, 0, d_o, "input 2 (bias)", "must match the output-channel degree");
    expect_replica(b, d_n * d_spatial * out_replica, "input 2 (bias)",
                   "one copy per sample, spatial and reduction task");
  }
  ParallelTensorShape y = x;
  y.dims[1] = {out_c, d_o};
  for (int i = 0; i < r; ++i)
    y.dims[2 + i].size =
        window_output(x.dims[2 + i].size, win.kernel[i], win.stride[i], win.padding[i],
                      win.padding[i], win.dilation[i], spatial_name(r, i));
  y.replica = out_replica;
  return {y};
}

// ConvTranspose: x [N, C, spatial...], weight [C, O/groups, kernel...] (ONNX's layout), bias [O].
// Each output dim is stride * (in - 1) + dilation * (kernel - 1) + 1 - 2 * padding +
// output_padding; a negative output_padding trims trailing outputs (ONNX end pads larger than the
// begin pads). Samples split; channels as Conv2D's with the roles of the weight's dims swapped
// (output channels: weight dim 1, x replicated; input channels: weight dim 0, partial sums); the
// spatial dims are whole (an output band would need the input band of every kernel offset).
Shapes infer_conv_transpose(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  const auto& w = in[1];
  const int r = spatial_rank(x);
  expect_floating(x, "input 0 (x)");
  const char* wname = "input 1 (weight [C, O/groups, kernel...])";
  expect_rank(w, x.rank(), wname);
  const std::int64_t out_c = op.attrs.get_int("out_channels");
  const std::int64_t groups = op.attrs.get_int("groups", 1);
  expect_positive(out_c, "out_channels");
  expect_positive(groups, "groups");
  const Window win = read_window(op, r, false);
  const auto out_pad = window_attr(op, "output_padding", r, std::vector<std::int64_t>(r, 0));
  const std::int64_t c = x.dims[1].size;
  if (c % groups != 0 || out_c % groups != 0)
    fail("groups {} must divide input channels {} and out_channels {}", groups, c, out_c);
  expect_size(w, 0, c, wname);
  expect_size(w, 1, out_c / groups, wname);
  for (int i = 0; i < r; ++i) expect_size(w, 2 + i, win.kernel[i], wname);

  const int d_n = x.dims[0].degree;
  const int d_c = x.dims[1].degree;
  for (int i = 0; i < r; ++i) {
    if (x.dims[2 + i].degree != 1)
      fail(
          "input 0 (x) dim {} has degree {} but must have degree 1 (a transposed convolution "
          "keeps its spatial dims whole); shape {}",
          2 + i, x.dims[2 + i].degree, x.to_string());
    expect_degree(w, 2 + i, 1, wname, "kernels are never split");
  }
  int d_o = w.dims[1].degree;
  int out_replica = 1;
  if (groups == 1) {
    expect_degree(w, 0, d_c, wname,
                  "the weight's input channels follow the input's channel degree");
    expect_replica(x, d_o, "input 0 (x)", "each output-channel partition reads the whole input");
    out_replica = d_c;
  } else {
    expect_degree(w, 1, 1, wname, "a grouped transposed convolution splits whole groups");
    expect_degree(w, 0, d_c, wname, "whole groups: the weight's dim 0 follows x's channels");
    if (groups % d_c != 0) fail("channel degree {} does not divide groups {}", d_c, groups);
    expect_replica(x, 1, "input 0 (x)", "group partitions read disjoint channels");
    d_o = d_c;
  }
  expect_replica(w, d_n, wname, "one copy per sample partition");
  if (in.size() == 3) {
    const auto& b = in[2];
    expect_rank(b, 1, "input 2 (bias)");
    expect_size(b, 0, out_c, "input 2 (bias)");
    expect_degree(b, 0, d_o, "input 2 (bias)", "must match the output-channel degree");
    expect_replica(b, d_n * out_replica, "input 2 (bias)",
                   "one copy per sample and reduction task");
  }
  ParallelTensorShape y = x;
  y.dims[1] = {out_c, d_o};
  for (int i = 0; i < r; ++i) {
    const std::int64_t span = win.dilation[i] * (win.kernel[i] - 1) + 1;
    const std::int64_t size =
        win.stride[i] * (x.dims[2 + i].size - 1) + span - 2 * win.padding[i] + out_pad[i];
    if (size < 1)
      fail("padding {} leaves no output along the {} (input {}, kernel {}, stride {})",
           win.padding[i], spatial_name(r, i), x.dims[2 + i].size, win.kernel[i], win.stride[i]);
    y.dims[2 + i].size = size;
  }
  y.replica = out_replica;
  return {y};
}

Shapes infer_pool2d(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  const int r = spatial_rank(x);
  expect_floating(x, "input 0 (x)");
  const auto& pool = op.attrs.get_string("pool");
  if (pool != "max" && pool != "avg")
    fail("attribute 'pool' must be \"max\" or \"avg\", got \"{}\"", pool);
  const Window win = read_window(op, r, true);
  // `padding` is the padding before each spatial dim; `padding_end`, when given, the padding
  // after it (ONNX's asymmetric and auto pads, and ceil_mode's last partial window).
  const auto end = window_attr(op, "padding_end", r, win.padding);
  const std::int64_t count_pad = op.attrs.get_int("count_include_pad", 0);
  if (count_pad != 0 && count_pad != 1)
    fail("attribute 'count_include_pad' must be 0 or 1, got {}", count_pad);
  ParallelTensorShape y = x;
  for (int i = 0; i < r; ++i) {
    if (end[i] < 0) fail("attribute 'padding_end' must not be negative");
    y.dims[2 + i].size = window_output(x.dims[2 + i].size, win.kernel[i], win.stride[i],
                                       win.padding[i], end[i], win.dilation[i], spatial_name(r, i));
  }
  return {y};
}

}  // namespace

Shapes infer_convolution(const Operator& op, const Shapes& in) {
  if (op.type == OpType::Conv2D) return infer_conv2d(op, in);
  if (op.type == OpType::ConvTranspose) return infer_conv_transpose(op, in);
  return infer_pool2d(op, in);
}

}  // namespace unity::shape_rules
