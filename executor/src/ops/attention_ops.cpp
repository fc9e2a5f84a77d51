// MultiHeadAttention from GEMMs, a softmax and head transposes. A task with a head partition
// projects with its columns of w_q, w_k, w_v, attends with its heads and multiplies by its rows of
// w_o: its output is a partial sum over heads, completed by the Reduce that follows. The heads are
// "head_dim" wide (default E / heads): q, k, v and the context are heads x head_dim, which need
// not be E.
// With "causal" = 1, query i attends to keys j <= i only: an additive mask (0, or -inf above the
// diagonal) is added to the scores before the softmax. The masked probabilities are then exactly 0,
// so the softmax backward gives their scores no gradient and the backward pass needs no change.
#include <cmath>
#include <limits>

#include "op_helpers.h"

namespace unity::executor::detail {
namespace {

enum Buf {
  kQ,
  kK,
  kV,
  kQh,
  kKh,
  kVh,
  kP,
  kOh,
  kO,
  kdO,
  kdOh,
  kdP,
  kdS,
  kdQh,
  kdKh,
  kdVh,
  kdQ,
  kdK,
  kdV,
  kCount
};

class AttentionRunner final : public OpRunner {
 public:
  explicit AttentionRunner(const Node& n)
      : heads_(n.op.attrs.get_int("num_heads")),
        head_dim_(n.op.attrs.get_int("head_dim", 0)),
        causal_(n.op.attrs.get_int("causal", 0) != 0) {}

  void prepare(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const D d = dims(t);
      const i64 sizes[kCount] = {
          d.n * d.sq * d.el,        d.n * d.sk * d.el, d.n * d.sk * d.el,
          d.n * d.sq * d.el,        d.n * d.sk * d.el, d.n * d.sk * d.el,
          d.n * d.hl * d.sq * d.sk, d.n * d.sq * d.el, d.n * d.sq * d.el,
          d.n * d.sq * d.el,        d.n * d.sq * d.el, d.n * d.hl * d.sq * d.sk,
          d.n * d.hl * d.sq * d.sk, d.n * d.sq * d.el, d.n * d.sk * d.el,
          d.n * d.sk * d.el,        d.n * d.sq * d.el, d.n * d.sk * d.el,
          d.n * d.sk * d.el};
      for (i64 s : sizes) t.scratch.push_back(ctx.memory.allocate_floats(s));
      if (causal_) {
        std::vector<float> mask(static_cast<std::size_t>(d.sq * d.sk), 0.0f);
        for (i64 i = 0; i < d.sq; ++i)
          for (i64 j = i + 1; j < d.sk; ++j)
            mask[static_cast<std::size_t>(i * d.sk + j)] = -std::numeric_limits<float>::infinity();
        float* device_mask = ctx.memory.allocate_floats(d.sq * d.sk);
        ctx.backend.to_device(device_mask, mask.data(), mask.size() * sizeof(float));
        t.scratch.push_back(device_mask);  // scratch[kCount]
      }
    }
  }

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    auto& be = ctx.backend;
    for (auto& t : tasks) {
      const D d = dims(t);
      const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.dh)));
      const i64 batch = d.n * d.hl;
      project(be, t, 0, 3, kQ, kQh, d.sq, d);
      project(be, t, 1, 4, kK, kKh, d.sk, d);
      project(be, t, 2, 5, kV, kVh, d.sk, d);
      be.gemm(false, true, d.sq, d.sk, d.dh, scale, f(t, kQh), d.dh, f(t, kKh), d.dh, 0.0f,
              f(t, kP), d.sk, batch, d.sq * d.dh, d.sk * d.dh, d.sq * d.sk);
      if (causal_)
        be.binary(BinaryKind::Add, {{batch, d.sq, d.sk}, {batch, d.sq, d.sk}, {1, d.sq, d.sk}},
                  f(t, kP), f(t, kCount), f(t, kP));
      be.softmax(f(t, kP), f(t, kP), batch * d.sq, d.sk, 1);
      be.gemm(false, false, d.sq, d.dh, d.sk, 1.0f, f(t, kP), d.sk, f(t, kVh), d.dh, 0.0f,
              f(t, kOh), d.dh, batch, d.sq * d.sk, d.sk * d.dh, d.sq * d.dh);
      be.transpose(f(t, kOh), f(t, kO), {d.n, d.hl, d.sq, d.dh}, {0, 2, 1, 3}, 4, false);
      be.gemm(false, false, d.n * d.sq, d.e, d.el, 1.0f, f(t, kO), d.el, t.in[6]->f(), d.e, 0.0f,
              t.out[0]->f(), d.e);
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    auto& be = ctx.backend;
    for (auto& t : tasks) {
      const float* dy = t.out[0]->grad;
      if (!dy) continue;
      const D d = dims(t);
      const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.dh)));
      const i64 batch = d.n * d.hl;
      be.gemm(false, true, d.n * d.sq, d.el, d.e, 1.0f, dy, d.e, t.in[6]->f(), d.e, 0.0f, f(t, kdO),
              d.el);
      if (t.in[6]->grad)
        be.gemm(true, false, d.el, d.e, d.n * d.sq, 1.0f, f(t, kO), d.el, dy, d.e, 1.0f,
                t.in[6]->grad, d.e);
      be.transpose(f(t, kdO), f(t, kdOh), {d.n, d.sq, d.hl, d.dh}, {0, 2, 1, 3}, 4, false);
      be.gemm(false, true, d.sq, d.sk, d.dh, 1.0f, f(t, kdOh), d.dh, f(t, kVh), d.dh, 0.0f,
              f(t, kdP), d.sk, batch, d.sq * d.dh, d.sk * d.dh, d.sq * d.sk);
      be.gemm(true, false, d.sk, d.dh, d.sq, 1.0f, f(t, kP), d.sk, f(t, kdOh), d.dh, 0.0f,
              f(t, kdVh), d.dh, batch, d.sq * d.sk, d.sq * d.dh, d.sk * d.dh);
      be.fill_zero(f(t, kdS), static_cast<std::size_t>(batch * d.sq * d.sk) * 4);
      be.softmax_backward(f(t, kP), f(t, kdP), f(t, kdS), batch * d.sq, d.sk, 1);
      be.gemm(false, false, d.sq, d.dh, d.sk, scale, f(t, kdS), d.sk, f(t, kKh), d.dh, 0.0f,
              f(t, kdQh), d.dh, batch, d.sq * d.sk, d.sk * d.dh, d.sq * d.dh);
      be.gemm(true, false, d.sk, d.dh, d.sq, scale, f(t, kdS), d.sk, f(t, kQh), d.dh, 0.0f,
              f(t, kdKh), d.dh, batch, d.sq * d.sk, d.sq * d.dh, d.sk * d.dh);
      unproject(be, t, 0, 3, kdQh, kdQ, d.sq, d);
      unproject(be, t, 1, 4, kdKh, kdK, d.sk, d);
      unproject(be, t, 2, 5, kdVh, kdV, d.sk, d);
    }
  }

 private:
  struct D {
    i64 n, sq, sk, e, el, dh, hl;
  };
  static float* f(TaskBuffers& t, int i) { return static_cast<float*>(t.scratch[i]); }

  D dims(const TaskBuffers& t) const {
    D d;
    d.n = t.in[0]->shape[0];
    d.sq = t.in[0]->shape[1];
    d.sk = t.in[1]->shape[1];
    d.e = t.in[0]->shape[2];
    d.el = t.in[3]->shape[1];  // this task's heads x the head size
    d.dh = head_dim_ > 0 ? head_dim_ : d.e / heads_;
    d.hl = d.el / d.dh;
    return d;
  }

  // X [n*s, E] @ W [E, El] -> [n, s, Hl, dh] -> heads [n, Hl, s, dh].
  static void project(DeviceBackend& be, TaskBuffers& t, int x, int w, int flat, int heads, i64 s,
                      const D& d) {
    be.gemm(false, false, d.n * s, d.el, d.e, 1.0f, t.in[x]->f(), d.e, t.in[w]->f(), d.el, 0.0f,
            f(t, flat), d.el);
    be.transpose(f(t, flat), f(t, heads), {d.n, s, d.hl, d.dh}, {0, 2, 1, 3}, 4, false);
  }

  // The gradient of project(): heads back to [n*s, El], then into W and X.
  static void unproject(DeviceBackend& be, TaskBuffers& t, int x, int w, int heads, int flat, i64 s,
                        const D& d) {
    be.transpose(f(t, heads), f(t, flat), {d.n, d.hl, s, d.dh}, {0, 2, 1, 3}, 4, false);
    if (t.in[w]->grad)
      be.gemm(true, false, d.e, d.el, d.n * s, 1.0f, t.in[x]->f(), d.e, f(t, flat), d.el, 1.0f,
              t.in[w]->grad, d.el);
    if (t.in[x]->grad)
      be.gemm(false, true, d.n * s, d.e, d.el, 1.0f, f(t, flat), d.el, t.in[w]->f(), d.el, 1.0f,
              t.in[x]->grad, d.e);
  }

  i64 heads_;
  i64 head_dim_;  // 0: the embedding size over the heads
  bool causal_;
};

}  // namespace

std::unique_ptr<OpRunner> make_attention_runner(const Graph&, const Node& n) {
  return std::make_unique<AttentionRunner>(n);
}

}  // namespace unity::executor::detail
