// Conv2D and Pool2D on NCHW tensors. Sample and spatial degrees pass through (spatial partitions
// exchange halos at run time, which the cost model charges); convolution channels parallelise as a
// matrix multiplication does: output channels need a replicated input, input channels leave partial
// sums. A grouped convolution instead splits input and output channels together, by whole groups.
#include "shape_rules.h"

namespace unity::shape_rules {
namespace {

std::int64_t window_output(std::int64_t size, std::int64_t kernel, std::int64_t stride,
                           std::int64_t pad, std::int64_t dilation, const char* dim) {
  const std::int64_t span = dilation * (kernel - 1) + 1;
  const std::int64_t out = (size + 2 * pad - span) / stride + 1;
  if (size + 2 * pad < span || out < 1)
    fail("window of {} (kernel {}, dilation {}) does not fit the {} {} with padding {}", span,
         kernel, dilation, dim, size, pad);
  return out;
}

Shapes infer_conv2d(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  const auto& w = in[1];
  check_activation(op);
  expect_rank(x, 4, "input 0 (x [N, C, H, W])");
  expect_floating(x, "input 0 (x)");
  expect_rank(w, 4, "input 1 (weight [O, C/groups, kh, kw])");
  const std::int64_t out_c = op.attrs.get_int("out_channels");
  const std::int64_t groups = op.attrs.get_int("groups", 1);
  expect_positive(out_c, "out_channels");
  expect_positive(groups, "groups");
  auto [kh, kw] = pair_attr(op, "kernel", {});
  auto [sh, sw] = pair_attr(op, "stride", {1, 1});
  auto [ph, pw] = pair_attr(op, "padding", {0, 0});
  auto [dh, dw] = pair_attr(op, "dilation", {1, 1});
  expect_positive(kh, "kernel");
  expect_positive(kw, "kernel");
  expect_positive(sh, "stride");
  expect_positive(sw, "stride");
  expect_positive(dh, "dilation");
  expect_positive(dw, "dilation");
  if (ph < 0 || pw < 0) fail("attribute 'padding' must not be negative");
  const std::int64_t c = x.dims[1].size;
  if (c % groups != 0 || out_c % groups != 0)
    fail("groups {} must divide input channels {} and out_channels {}", groups, c, out_c);
  const char* wname = "input 1 (weight [O, C/groups, kh, kw])";
  expect_size(w, 0, out_c, wname);
  expect_size(w, 1, c / groups, wname);
  expect_size(w, 2, kh, wname);
  expect_size(w, 3, kw, wname);
  const std::int64_t oh = window_output(x.dims[2].size, kh, sh, ph, dh, "height");
  const std::int64_t ow = window_output(x.dims[3].size, kw, sw, pw, dw, "width");

  const int d_n = x.dims[0].degree;
  const int d_c = x.dims[1].degree;
  const int d_spatial = x.dims[2].degree * x.dims[3].degree;
  const int d_o = w.dims[0].degree;
  expect_degree(w, 2, 1, wname, "kernels are never split");
  expect_degree(w, 3, 1, wname, "kernels are never split");
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
  y.dims = {x.dims[0], {out_c, d_o}, {oh, x.dims[2].degree}, {ow, x.dims[3].degree}};
  y.replica = out_replica;
  return {y};
}

Shapes infer_pool2d(const Operator& op, const Shapes& in) {
  const auto& x = in[0];
  expect_rank(x, 4, "input 0 (x [N, C, H, W])");
  expect_floating(x, "input 0 (x)");
  const auto& pool = op.attrs.get_string("pool");
  if (pool != "max" && pool != "avg")
    fail("attribute 'pool' must be \"max\" or \"avg\", got \"{}\"", pool);
  auto [kh, kw] = pair_attr(op, "kernel", {});
  expect_positive(kh, "kernel");
  expect_positive(kw, "kernel");
  auto [sh, sw] = pair_attr(op, "stride", {kh, kw});
  auto [ph, pw] = pair_attr(op, "padding", {0, 0});
  expect_positive(sh, "stride");
  expect_positive(sw, "stride");
  if (ph < 0 || pw < 0) fail("attribute 'padding' must not be negative");
  ParallelTensorShape y = x;
  y.dims[2].size = window_output(x.dims[2].size, kh, sh, ph, 1, "height");
  y.dims[3].size = window_output(x.dims[3].size, kw, sw, pw, 1, "width");
  return {y};
}

}  // namespace

Shapes infer_convolution(const Operator& op, const Shapes& in) {
  return op.type == OpType::Conv2D ? infer_conv2d(op, in) : infer_pool2d(op, in);
}

}  // namespace unity::shape_rules
