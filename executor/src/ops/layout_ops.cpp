// Concat, Split, Transpose, Expand, Softmax, ReduceSum/ReduceMean, and the operators that only
// reinterpret a buffer (Reshape, Flatten, Identity: the output piece is the input's buffer).
#include "kernel_registry.h"
#include "op_helpers.h"

namespace unity::executor::detail {
namespace {

// Copies (or adds) the whole of `small` into `big` at `offset` along `axis`, or back.
void place(DeviceBackend& be, const void* src, const std::vector<i64>& src_shape, void* dst,
           const std::vector<i64>& dst_shape, int axis, i64 offset, bool into_big, int es,
           bool add) {
  BoxCopy c;
  c.src = src;
  c.dst = dst;
  c.elem_size = es;
  c.add = add;
  c.src_shape = src_shape;
  c.dst_shape = dst_shape;
  c.src_offset.assign(src_shape.size(), 0);
  c.dst_offset.assign(dst_shape.size(), 0);
  if (into_big) {
    c.dst_offset[axis] = offset;
    c.extent = src_shape;
  } else {
    c.src_offset[axis] = offset;
    c.extent = dst_shape;
  }
  be.copy_box(c);
}

class ReinterpretRunner final : public OpRunner {
 public:
  bool output_is_input() const override { return true; }
  void forward(StepContext&, std::vector<TaskBuffers>&) override {}
  void backward(StepContext&, std::vector<TaskBuffers>&) override {}
};

class ConcatRunner final : public OpRunner {
 public:
  explicit ConcatRunner(const Node& n) : axis_(static_cast<int>(n.op.attrs.get_int("axis"))) {}
  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const int axis = axis_ < 0 ? axis_ + static_cast<int>(t.out[0]->shape.size()) : axis_;
      i64 offset = 0;
      for (auto* in : t.in) {
        place(ctx.backend, in->value, in->shape, t.out[0]->value, t.out[0]->shape, axis, offset,
              true, in->elem_size, false);
        offset += in->shape[axis];
      }
    }
  }
  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      if (!t.out[0]->grad) continue;
      const int axis = axis_ < 0 ? axis_ + static_cast<int>(t.out[0]->shape.size()) : axis_;
      i64 offset = 0;
      for (auto* in : t.in) {
        if (in->grad)
          place(ctx.backend, t.out[0]->grad, t.out[0]->shape, in->grad, in->shape, axis, offset,
                false, 4, true);
        offset += in->shape[axis];
      }
    }
  }

 private:
  int axis_;
};

class SplitRunner final : public OpRunner {
 public:
  explicit SplitRunner(const Node& n) : axis_(static_cast<int>(n.op.attrs.get_int("axis"))) {}
  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const int axis = axis_ < 0 ? axis_ + static_cast<int>(t.in[0]->shape.size()) : axis_;
      i64 offset = 0;
      for (auto* out : t.out) {
        place(ctx.backend, t.in[0]->value, t.in[0]->shape, out->value, out->shape, axis, offset,
              false, out->elem_size, false);
        offset += out->shape[axis];
      }
    }
  }
  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      if (!t.in[0]->grad) continue;
      const int axis = axis_ < 0 ? axis_ + static_cast<int>(t.in[0]->shape.size()) : axis_;
      i64 offset = 0;
      for (auto* out : t.out) {
        if (out->grad)
          place(ctx.backend, out->grad, out->shape, t.in[0]->grad, t.in[0]->shape, axis, offset,
                true, 4, true);
        offset += out->shape[axis];
      }
    }
  }

 private:
  int axis_;
};

class TransposeRunner final : public OpRunner {
 public:
  explicit TransposeRunner(const Node& n) : perm_(n.op.attrs.get_ints("perm")) {
    inverse_.resize(perm_.size());
    for (std::size_t d = 0; d < perm_.size(); ++d) inverse_[perm_[d]] = static_cast<i64>(d);
  }
  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks)
      ctx.backend.transpose(t.in[0]->value, t.out[0]->value, t.in[0]->shape, perm_,
                            t.in[0]->elem_size, false);
  }
  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks)
      if (t.in[0]->grad && t.out[0]->grad)
        ctx.backend.transpose(t.out[0]->grad, t.in[0]->grad, t.out[0]->shape, inverse_, 4, true);
  }

 private:
  std::vector<i64> perm_, inverse_;
};

class SoftmaxRunner final : public OpRunner {
 public:
  explicit SoftmaxRunner(const Node& n) : axis_(static_cast<int>(n.op.attrs.get_int("axis", -1))) {}
  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const auto [outer, axis, inner] = dims(*t.in[0]);
      ctx.backend.softmax(t.in[0]->f(), t.out[0]->f(), outer, axis, inner);
    }
  }
  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      if (!t.in[0]->grad || !t.out[0]->grad) continue;
      const auto [outer, axis, inner] = dims(*t.in[0]);
      ctx.backend.softmax_backward(t.out[0]->f(), t.out[0]->grad, t.in[0]->grad, outer, axis,
                                   inner);
    }
  }

 private:
  std::tuple<i64, i64, i64> dims(const Slot& x) const {
    const int rank = static_cast<int>(x.shape.size());
    const int a = axis_ < 0 ? axis_ + rank : axis_;
    return {product(x.shape, 0, a), x.shape[a], product(x.shape, a + 1)};
  }
  int axis_;
};

class ReduceRunner final : public OpRunner {
 public:
  ReduceRunner(const Graph& g, const Node& n) {
    const auto& x = g.shape(n.inputs[0]);
    for (auto a : n.op.attrs.get_ints("axes")) axes_.push_back(x.axis(static_cast<int>(a)));
    if (n.op.type == OpType::ReduceMean) {
      double count = 1;
      for (int a : axes_) count *= static_cast<double>(x.dims[a].size);
      scale_ = static_cast<float>(1.0 / count);
    }
  }
  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks)
      ctx.backend.reduce_sum(t.in[0]->f(), t.out[0]->f(), t.in[0]->shape, kept(*t.in[0]), scale_);
  }
  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks)
      if (t.in[0]->grad && t.out[0]->grad)
        ctx.backend.reduce_sum_backward(t.out[0]->grad, t.in[0]->grad, t.in[0]->shape,
                                        kept(*t.in[0]), scale_);
  }

 private:
  // The input's local shape with the reduced axes set to 1.
  std::vector<i64> kept(const Slot& x) const {
    std::vector<i64> s = x.shape;
    for (int a : axes_) s[a] = 1;
    return s;
  }
  std::vector<int> axes_;
  float scale_ = 1.0f;
};

// Broadcasts the input to the output piece; the backward sums the output gradient over the
// broadcast dims into the input's.
class ExpandRunner final : public OpRunner {
 public:
  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const auto& y = *t.out[0];
      if (y.elem_size == 8) {
        expand_integers(ctx.backend, *t.in[0], y);
        continue;
      }
      ctx.backend.fill_zero(y.value, static_cast<std::size_t>(numel(y.shape)) * 4);
      ctx.backend.reduce_sum_backward(t.in[0]->f(), y.f(), y.shape, aligned(*t.in[0], y), 1.0f);
    }
  }
  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const auto& y = *t.out[0];
      if (!t.in[0]->grad || !y.grad) continue;
      const BroadcastShape s{y.shape, aligned(*t.in[0], y), y.shape};
      ctx.backend.binary_backward(BinaryKind::Add, s, nullptr, nullptr, y.grad, t.in[0]->grad,
                                  nullptr);
    }
  }

 private:
  static i64 numel(const std::vector<i64>& shape) {
    i64 n = 1;
    for (auto e : shape) n *= e;
    return n;
  }
  // Indices broadcast (a Gather by computed indices), on the host: no gradient.
  static void expand_integers(DeviceBackend& be, const Slot& x, const Slot& y) {
    std::vector<std::int64_t> in(static_cast<std::size_t>(x.elements()));
    std::vector<std::int64_t> out(static_cast<std::size_t>(y.elements()));
    be.to_host(in.data(), x.value, in.size() * sizeof(std::int64_t));
    const std::vector<i64> xs = aligned(x, y);
    const int r = static_cast<int>(y.shape.size());
    std::vector<i64> index(static_cast<std::size_t>(r), 0);
    for (std::size_t o = 0; o < out.size(); ++o) {
      i64 src = 0;
      for (int d = 0; d < r; ++d) src = src * xs[d] + (xs[d] == 1 ? 0 : index[d]);
      out[o] = in[static_cast<std::size_t>(src)];
      for (int d = r - 1; d >= 0 && ++index[d] == y.shape[d]; --d) index[d] = 0;
    }
    be.to_device(y.value, out.data(), out.size() * sizeof(std::int64_t));
  }
  // The input's shape with leading 1s up to the output's rank.
  static std::vector<i64> aligned(const Slot& x, const Slot& y) {
    std::vector<i64> s(y.shape.size() - x.shape.size(), 1);
    s.insert(s.end(), x.shape.begin(), x.shape.end());
    return s;
  }
};

}  // namespace

static std::unique_ptr<OpRunner> make_layout_runner(const Graph& g, const Node& n) {
  switch (n.op.type) {
    case OpType::Concat:
      return std::make_unique<ConcatRunner>(n);
    case OpType::Split:
      return std::make_unique<SplitRunner>(n);
    case OpType::Transpose:
      return std::make_unique<TransposeRunner>(n);
    case OpType::Expand:
      return std::make_unique<ExpandRunner>();
    case OpType::Softmax:
      return std::make_unique<SoftmaxRunner>(n);
    case OpType::ReduceSum:
    case OpType::ReduceMean:
      return std::make_unique<ReduceRunner>(g, n);
    default:
      return std::make_unique<ReinterpretRunner>();
  }
}

UNITY_REGISTER_KERNEL(make_layout_runner, OpType::Concat, OpType::Split, OpType::Reshape,
                      OpType::Flatten, OpType::Transpose, OpType::Expand, OpType::Softmax,
                      OpType::ReduceSum, OpType::ReduceMean, OpType::Identity)

}  // namespace unity::executor::detail
