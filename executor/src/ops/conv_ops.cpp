// Conv2D and Pool2D on NCHW pieces. A task whose output rows (or columns) are a band of the whole
// requested the input band it needs (with the halo its neighbours hold); padding applies only where
// the band reaches the edge of the whole tensor.
#include "op_helpers.h"

namespace unity::executor::detail {
namespace {

std::pair<i64, i64> pair_of(const Operator& op, const char* name, std::vector<i64> fallback) {
  auto v = op.attrs.get_ints(name, fallback);
  if (v.size() == 1) v.push_back(v[0]);
  return {v[0], v[1]};
}

// Padding on each side of the task's input band.
void band_padding(const Slot& x, const Slot& y, i64 kh, i64 kw, i64 sh, i64 sw, i64 ph, i64 pw,
                  i64 dh, i64 dw, i64& top, i64& bottom, i64& left, i64& right) {
  const i64 first_r = y.region.begin[2] * sh - ph;
  const i64 last_r = (y.region.end[2] - 1) * sh - ph + dh * (kh - 1) + 1;
  const i64 first_c = y.region.begin[3] * sw - pw;
  const i64 last_c = (y.region.end[3] - 1) * sw - pw + dw * (kw - 1) + 1;
  top = x.region.begin[2] - first_r;
  bottom = last_r - x.region.end[2];
  left = x.region.begin[3] - first_c;
  right = last_c - x.region.end[3];
}

class ConvRunner final : public OpRunner {
 public:
  explicit ConvRunner(const Node& n) : act_(n.op), has_bias_(n.inputs.size() == 3) {
    std::tie(kh_, kw_) = pair_of(n.op, "kernel", {});
    std::tie(sh_, sw_) = pair_of(n.op, "stride", {1, 1});
    std::tie(ph_, pw_) = pair_of(n.op, "padding", {0, 0});
    std::tie(dh_, dw_) = pair_of(n.op, "dilation", {1, 1});
    groups_ = n.op.attrs.get_int("groups", 1);
  }

  void prepare(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const i64 n = t.out[0]->elements();
      t.scratch.push_back(act_.none() ? nullptr : ctx.memory.allocate_floats(n));
      t.scratch.push_back(act_.needs_input() ? ctx.memory.allocate_floats(n) : nullptr);
    }
  }

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const ConvSpec s = spec(ctx, t);
      Slot& y = *t.out[0];
      ctx.backend.conv2d(s, t.in[0]->f(), t.in[1]->f(), y.f());
      if (has_bias_ && first_reduction_block(ctx, t))
        ctx.backend.add_bias(y.f(), t.in[2]->f(), s.n, s.o, s.oh * s.ow);
      act_.forward(ctx.backend, y.f(), static_cast<float*>(t.scratch[1]), y.elements());
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      Slot& y = *t.out[0];
      if (!y.grad) continue;
      const ConvSpec s = spec(ctx, t);
      const float* dz = act_.backward(ctx.backend, y.f(), static_cast<float*>(t.scratch[1]), y.grad,
                                      static_cast<float*>(t.scratch[0]), y.elements());
      if (t.in[0]->grad) ctx.backend.conv2d_backward_data(s, dz, t.in[1]->f(), t.in[0]->grad);
      if (t.in[1]->grad) ctx.backend.conv2d_backward_filter(s, t.in[0]->f(), dz, t.in[1]->grad);
      if (has_bias_ && t.in[2]->grad && first_reduction_block(ctx, t))
        ctx.backend.bias_grad(dz, t.in[2]->grad, s.n, s.o, s.oh * s.ow);
    }
  }

 private:
  static bool first_reduction_block(const StepContext& ctx, const TaskBuffers& t) {
    return t.task->index % ctx.node.outputs[0].replica == 0;
  }

  ConvSpec spec(const StepContext&, const TaskBuffers& t) const {
    const Slot& x = *t.in[0];
    const Slot& w = *t.in[1];
    const Slot& y = *t.out[0];
    ConvSpec s;
    s.n = x.shape[0];
    s.c = x.shape[1];
    s.h = x.shape[2];
    s.w = x.shape[3];
    s.o = y.shape[1];
    // A grouped convolution's task holds whole groups: as many as its channels span.
    s.groups = groups_ == 1 ? 1 : s.c / w.shape[1];
    s.kh = kh_;
    s.kw = kw_;
    s.sh = sh_;
    s.sw = sw_;
    s.dh = dh_;
    s.dw = dw_;
    band_padding(x, y, kh_, kw_, sh_, sw_, ph_, pw_, dh_, dw_, s.pad_top, s.pad_bottom, s.pad_left,
                 s.pad_right);
    s.oh = y.shape[2];
    s.ow = y.shape[3];
    return s;
  }

  FusedActivation act_;
  bool has_bias_;
  i64 kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, ph_ = 0, pw_ = 0, dh_ = 1, dw_ = 1, groups_ = 1;
};

class PoolRunner final : public OpRunner {
 public:
  explicit PoolRunner(const Node& n) : max_(n.op.attrs.get_string("pool") == "max") {
    std::tie(kh_, kw_) = pair_of(n.op, "kernel", {});
    std::tie(sh_, sw_) = pair_of(n.op, "stride", {kh_, kw_});
    std::tie(ph_, pw_) = pair_of(n.op, "padding", {0, 0});
  }

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
    PoolSpec s;
    s.max = max_;
    s.n = x.shape[0];
    s.c = x.shape[1];
    s.h = x.shape[2];
    s.w = x.shape[3];
    s.kh = kh_;
    s.kw = kw_;
    s.sh = sh_;
    s.sw = sw_;
    band_padding(x, y, kh_, kw_, sh_, sw_, ph_, pw_, 1, 1, s.pad_top, s.pad_bottom, s.pad_left,
                 s.pad_right);
    s.oh = y.shape[2];
    s.ow = y.shape[3];
    return s;
  }

  bool max_;
  i64 kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, ph_ = 0, pw_ = 0;
};

}  // namespace

std::unique_ptr<OpRunner> make_conv_runner(const Graph&, const Node& n) {
  if (n.op.type == OpType::Conv2D) return std::make_unique<ConvRunner>(n);
  return std::make_unique<PoolRunner>(n);
}

}  // namespace unity::executor::detail
