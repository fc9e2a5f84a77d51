// Conv2D, ConvTranspose and Pool2D on [N, C, spatial...] pieces with 1 to 3 spatial dims, run as
// 3-D ones (leading spatial extents 1). A task whose output rows (or columns) are a band of the
// whole requested the input band it needs (with the halo its neighbours hold); padding applies only
// where the band reaches the edge of the whole tensor.
#include <array>
#include <tuple>

#include "kernel_registry.h"
#include "op_helpers.h"
#include "unity/core/ops/window_attrs.h"

namespace unity::executor::detail {
namespace {

// A node's window over its r spatial dims, widened to three (depth, height, width).
struct Window3 {
  std::array<i64, 3> kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dilation{1, 1, 1},
      out_pad{0, 0, 0};
};

Window3 read_window(const Operator& op, int r, bool pool) {
  Window3 w;
  const auto kernel = window_attr(op, "kernel", r, {});
  w.kernel = window3(kernel, 1);
  w.stride = window3(window_attr(op, "stride", r, pool ? kernel : std::vector<i64>(r, 1)), 1);
  w.pad = window3(window_attr(op, "padding", r, std::vector<i64>(r, 0)), 0);
  w.dilation = window3(window_attr(op, "dilation", r, std::vector<i64>(r, 1)), 1);
  w.out_pad = window3(window_attr(op, "output_padding", r, std::vector<i64>(r, 0)), 0);
  return w;
}

// A slot's spatial extents (dims 2...), widened to three.
std::array<i64, 3> extents3(const Slot& s) {
  return window3(std::vector<i64>(s.shape.begin() + 2, s.shape.end()), 1);
}

// Padding on each side of the task's input band, per spatial dim (widened to three).
void band_padding(const Slot& x, const Slot& y, const Window3& w, std::array<i64, 3>& before,
                  std::array<i64, 3>& after) {
  const int r = static_cast<int>(x.shape.size()) - 2;
  before = {0, 0, 0};
  after = {0, 0, 0};
  for (int i = 0; i < r; ++i) {
    const int k = 3 - r + i, dim = 2 + i;
    const i64 first = y.region.begin[dim] * w.stride[k] - w.pad[k];
    const i64 last =
        (y.region.end[dim] - 1) * w.stride[k] - w.pad[k] + w.dilation[k] * (w.kernel[k] - 1) + 1;
    before[k] = x.region.begin[dim] - first;
    after[k] = last - x.region.end[dim];
  }
}

// The convolution of conv input `x` (channels c) to conv output `y` (channels o).
ConvSpec conv_spec(const Slot& x, const Slot& y, const Window3& win,
                   const std::array<i64, 3>& before, const std::array<i64, 3>& after) {
  ConvSpec s;
  s.n = x.shape[0];
  s.c = x.shape[1];
  s.o = y.shape[1];
  const auto in = extents3(x), out = extents3(y);
  std::tie(s.d, s.h, s.w) = std::tuple(in[0], in[1], in[2]);
  std::tie(s.od, s.oh, s.ow) = std::tuple(out[0], out[1], out[2]);
  std::tie(s.kd, s.kh, s.kw) = std::tuple(win.kernel[0], win.kernel[1], win.kernel[2]);
  std::tie(s.sd, s.sh, s.sw) = std::tuple(win.stride[0], win.stride[1], win.stride[2]);
  std::tie(s.dd, s.dh, s.dw) = std::tuple(win.dilation[0], win.dilation[1], win.dilation[2]);
  std::tie(s.pad_front, s.pad_top, s.pad_left) = std::tuple(before[0], before[1], before[2]);
  std::tie(s.pad_back, s.pad_bottom, s.pad_right) = std::tuple(after[0], after[1], after[2]);
  return s;
}

i64 spatial_volume(const Slot& s) {
  i64 v = 1;
  for (std::size_t i = 2; i < s.shape.size(); ++i) v *= s.shape[i];
  return v;
}

bool first_reduction_block(const StepContext& ctx, const TaskBuffers& t) {
  return t.task->index % ctx.node.outputs[0].replica == 0;
}

class ConvRunner final : public OpRunner {
 public:
  explicit ConvRunner(const Node& n)
      : act_(n.op),
        has_bias_(n.inputs.size() == 3),
        win_(read_window(n.op, static_cast<int>(n.outputs.at(0).rank()) - 2, false)),
        groups_(n.op.attrs.get_int("groups", 1)) {}

  void prepare(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const i64 n = t.out[0]->elements();
      t.scratch.push_back(act_.none() ? nullptr : ctx.memory.allocate_floats(n));
      t.scratch.push_back(act_.needs_input() ? ctx.memory.allocate_floats(n) : nullptr);
    }
  }

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const ConvSpec s = spec(t);
      Slot& y = *t.out[0];
      ctx.backend.conv2d(s, t.in[0]->f(), t.in[1]->f(), y.f());
      if (has_bias_ && first_reduction_block(ctx, t))
        ctx.backend.add_bias(y.f(), t.in[2]->f(), s.n, s.o, s.od * s.oh * s.ow);
      act_.forward(ctx.backend, y.f(), static_cast<float*>(t.scratch[1]), y.elements());
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      Slot& y = *t.out[0];
      if (!y.grad) continue;
      const ConvSpec s = spec(t);
      const float* dz = act_.backward(ctx.backend, y.f(), static_cast<float*>(t.scratch[1]), y.grad,
                                      static_cast<float*>(t.scratch[0]), y.elements());
      if (t.in[0]->grad) ctx.backend.conv2d_backward_data(s, dz, t.in[1]->f(), t.in[0]->grad);
      if (t.in[1]->grad) ctx.backend.conv2d_backward_filter(s, t.in[0]->f(), dz, t.in[1]->grad);
      if (has_bias_ && t.in[2]->grad && first_reduction_block(ctx, t))
        ctx.backend.bias_grad(dz, t.in[2]->grad, s.n, s.o, s.od * s.oh * s.ow);
    }
  }

 private:
  ConvSpec spec(const TaskBuffers& t) const {
    const Slot& x = *t.in[0];
    const Slot& w = *t.in[1];
    const Slot& y = *t.out[0];
    std::array<i64, 3> before, after;
    band_padding(x, y, win_, before, after);
    ConvSpec s = conv_spec(x, y, win_, before, after);
    // A grouped convolution's task holds whole groups: as many as its channels span.
    s.groups = groups_ == 1 ? 1 : s.c / w.shape[1];
    return s;
  }

  FusedActivation act_;
  bool has_bias_;
  Window3 win_;
  i64 groups_ = 1;
};

// ConvTranspose is the gradient of a convolution with respect to its input: y = conv's
// backward-data of x through the same weight ([C, O/groups, k...] is a convolution's [O',
// C'/groups, k...] from y's O channels to x's C). Its backward is that convolution's forward (dx)
// and backward-filter (dw, with the roles of its input and output gradient swapped). The spatial
// dims are whole; the end padding of the convolution is padding - output_padding (the extra output
// rows receive only the bias).
class ConvTransposeRunner final : public OpRunner {
 public:
  explicit ConvTransposeRunner(const Node& n)
      : has_bias_(n.inputs.size() == 3),
        win_(read_window(n.op, static_cast<int>(n.outputs.at(0).rank()) - 2, false)),
        groups_(n.op.attrs.get_int("groups", 1)) {}

  void prepare(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks)
      t.scratch.push_back(t.in[0]->grad ? ctx.memory.allocate_floats(t.in[0]->elements())
                                        : nullptr);
  }

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const ConvSpec s = spec(t);
      Slot& y = *t.out[0];
      ctx.backend.fill_zero(y.f(), static_cast<std::size_t>(y.elements()) * sizeof(float));
      ctx.backend.conv2d_backward_data(s, t.in[0]->f(), t.in[1]->f(), y.f());
      if (has_bias_ && first_reduction_block(ctx, t))
        ctx.backend.add_bias(y.f(), t.in[2]->f(), s.n, s.c, spatial_volume(y));
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      Slot& y = *t.out[0];
      if (!y.grad) continue;
      const ConvSpec s = spec(t);
      Slot& x = *t.in[0];
      if (x.grad) {
        auto* dx = static_cast<float*>(t.scratch[0]);
        ctx.backend.conv2d(s, y.grad, t.in[1]->f(), dx);
        ctx.backend.axpy(1.0f, dx, x.grad, x.elements());
      }
      if (t.in[1]->grad) ctx.backend.conv2d_backward_filter(s, y.grad, x.f(), t.in[1]->grad);
      if (has_bias_ && t.in[2]->grad && first_reduction_block(ctx, t))
        ctx.backend.bias_grad(y.grad, t.in[2]->grad, s.n, s.c, spatial_volume(y));
    }
  }

 private:
  ConvSpec spec(const TaskBuffers& t) const {
    const Slot& x = *t.in[0];
    const Slot& w = *t.in[1];
    const Slot& y = *t.out[0];
    std::array<i64, 3> after;
    for (int k = 0; k < 3; ++k) after[k] = win_.pad[k] - win_.out_pad[k];
    ConvSpec s = conv_spec(y, x, win_, win_.pad, after);
    // Whole groups: the task's output channels over the weight's per-group output channels.
    s.groups = groups_ == 1 ? 1 : s.c / w.shape[1];
    return s;
  }

  bool has_bias_;
  Window3 win_;
  i64 groups_ = 1;
};

class PoolRunner final : public OpRunner {
 public:
  explicit PoolRunner(const Node& n)
      : max_(n.op.attrs.get_string("pool") == "max"),
        count_include_pad_(n.op.attrs.get_int("count_include_pad", 0) != 0),
        win_(read_window(n.op, static_cast<int>(n.outputs.at(0).rank()) - 2, true)) {}

  void prepare(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks)
      t.scratch.push_back(
          max_ ? ctx.memory.allocate(static_cast<std::size_t>(t.out[0]->elements()) * 4) : nullptr);
  }

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks)
      ctx.backend.pool2d(spec(t), t.in[0]->f(), t.out[0]->f(),
                         static_cast<std::int32_t*>(t.scratch[0]));
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      if (!t.in[0]->grad || !t.out[0]->grad) continue;
      ctx.backend.pool2d_backward(spec(t), t.out[0]->grad, static_cast<std::int32_t*>(t.scratch[0]),
                                  t.in[0]->grad);
    }
  }

 private:
  PoolSpec spec(const TaskBuffers& t) const {
    const Slot& x = *t.in[0];
    const Slot& y = *t.out[0];
    std::array<i64, 3> before, after;
    band_padding(x, y, win_, before, after);
    const ConvSpec c = conv_spec(x, y, win_, before, after);
    PoolSpec s;
    s.max = max_;
    s.count_include_pad = count_include_pad_;
    s.n = c.n;
    s.c = c.c;
    std::tie(s.d, s.h, s.w, s.od, s.oh, s.ow) = std::tuple(c.d, c.h, c.w, c.od, c.oh, c.ow);
    std::tie(s.kd, s.kh, s.kw, s.sd, s.sh, s.sw) = std::tuple(c.kd, c.kh, c.kw, c.sd, c.sh, c.sw);
    std::tie(s.dd, s.dh, s.dw) = std::tuple(c.dd, c.dh, c.dw);
    std::tie(s.pad_front, s.pad_back, s.pad_top, s.pad_bottom, s.pad_left, s.pad_right) =
        std::tuple(c.pad_front, c.pad_back, c.pad_top, c.pad_bottom, c.pad_left, c.pad_right);
    return s;
  }

  bool max_;
  bool count_include_pad_;
  Window3 win_;
};

}  // namespace

static std::unique_ptr<OpRunner> make_conv_runner(const Graph&, const Node& n) {
  if (n.op.type == OpType::Conv2D) return std::make_unique<ConvRunner>(n);
  if (n.op.type == OpType::ConvTranspose) return std::make_unique<ConvTransposeRunner>(n);
  return std::make_unique<PoolRunner>(n);
}

UNITY_REGISTER_KERNEL(make_conv_runner, OpType::Conv2D, OpType::ConvTranspose, OpType::Pool2D)

}  // namespace unity::executor::detail
