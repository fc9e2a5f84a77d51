// MultiHeadAttention from GEMMs, a softmax and head transposes. A task with a head partition
// projects with its columns of w_q, w_k, w_v, attends with its heads and multiplies by its rows of
// w_o: its output is a partial sum over heads, completed by the Reduce that follows. The heads are
// "head_dim" wide (default E / heads): q, k, v and the context are heads x head_dim, which need
// not be E.
// Grouped-query attention ("num_kv_heads" < "num_heads") repeats each key/value head for its
// query heads after the projections, and sums their gradients back. With "rotary" = 1, q and k
// heads are rotated by their positions after the projections (rotate(): the half-split form, base
// "rotary_base", default 10000).
// With "causal" = 1, query i attends to keys j <= i only: an additive mask (0, or -inf above the
// diagonal) is added to the scores before the softmax. The masked probabilities are then exactly 0,
// so the softmax backward gives their scores no gradient and the backward pass needs no change.
// A sliding "window" w masks the keys before j = i - w + 1 too: query i sees itself and the w - 1
// keys before it.
// Context parallelism: a task may hold a block of the queries, rows [o, o + sq) of the sequence,
// against every key (the lowering requests the key and value whole). Its queries are at absolute
// positions o + i: the mask lets query o + i see keys j <= o + i and the rotary tables rotate
// query i by o + i, while keys rotate by j. The block's offset o is where the task's query
// request begins.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernel_registry.h"
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
  kKx,  // the key heads repeated for their query heads (grouped-query attention)
  kVx,
  kP,
  kOh,
  kO,
  kdO,
  kdOh,
  kdP,
  kdS,
  kdQh,
  kdKx,
  kdVx,
  kdKh,
  kdVh,
  kdQ,
  kdK,
  kdV,
  kRot,      // the rotated half-swap of q or k heads
  kCos,      // rotary tables [s, dh]
  kSinSwap,  // sin with the first half negated: rotate_half(x) * sin = swap(x) * this
  kCount
};

// The additive causal mask [sq, sk] of queries at positions offset, offset + 1, ...: -inf where a
// key lies after its query, or (with a sliding window w > 0) w or more positions before it.
std::vector<float> causal_mask(i64 offset, i64 sq, i64 sk, i64 window) {
  std::vector<float> mask(static_cast<std::size_t>(sq * sk), 0.0f);
  for (i64 i = 0; i < sq; ++i)
    for (i64 j = 0; j < sk; ++j) {
      const i64 position = offset + i;
      if (j > position || (window > 0 && j <= position - window))
        mask[static_cast<std::size_t>(i * sk + j)] = -std::numeric_limits<float>::infinity();
    }
  return mask;
}

class AttentionRunner final : public OpRunner {
 public:
  explicit AttentionRunner(const Node& n)
      : heads_(n.op.attrs.get_int("num_heads")),
        head_dim_(n.op.attrs.get_int("head_dim", 0)),
        causal_(n.op.attrs.get_int("causal", 0) != 0),
        window_(n.op.attrs.get_int("window", 0)),
        rotary_(n.op.attrs.get_int("rotary", 0) != 0),
        rotary_base_(n.op.attrs.get_double("rotary_base", 10000.0)) {}

  void prepare(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const D d = dims(t);
      const i64 q = d.n * d.sq * d.el, kv = d.n * d.sk * d.elk, kx = d.n * d.sk * d.el;
      const i64 scores = d.n * d.hl * d.sq * d.sk;
      const i64 rot = rotary_ ? std::max(q, kv) : 0;
      const i64 table = rotary_ ? table_rows(d) * d.dh : 0;
      const i64 sizes[kCount] = {q,  kv, kv, q,  kv,     kv,     kx,    kx,   scores,
                                 q,  q,  q,  q,  scores, scores, q,     kx,   kx,
                                 kv, kv, q,  kv, kv,     rot,    table, table};
      for (i64 size : sizes) t.scratch.push_back(size ? ctx.memory.allocate_floats(size) : nullptr);
      if (rotary_) upload_rotary_tables(ctx.backend, t, d);
      if (causal_) {
        const std::vector<float> mask = causal_mask(d.offset, d.sq, d.sk, window_);
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
      project(be, t, 0, 3, kQ, kQh, d.sq, d.el, d);
      project(be, t, 1, 4, kK, kKh, d.sk, d.elk, d);
      project(be, t, 2, 5, kV, kVh, d.sk, d.elk, d);
      if (rotary_) {
        rotate(be, t, kQh, d.n * d.hl, d.sq, d.offset, d, false);
        rotate(be, t, kKh, d.n * d.kvl, d.sk, 0, d, false);
      }
      const int keys = repeat_heads(be, t, kKh, kKx, d.sk, d);
      const int values = repeat_heads(be, t, kVh, kVx, d.sk, d);
      be.gemm(false, true, d.sq, d.sk, d.dh, scale, f(t, kQh), d.dh, f(t, keys), d.dh, 0.0f,
              f(t, kP), d.sk, batch, d.sq * d.dh, d.sk * d.dh, d.sq * d.sk);
      if (causal_)
        be.binary(BinaryKind::Add, {{batch, d.sq, d.sk}, {batch, d.sq, d.sk}, {1, d.sq, d.sk}},
                  f(t, kP), f(t, kCount), f(t, kP));
      be.softmax(f(t, kP), f(t, kP), batch * d.sq, d.sk, 1);
      be.gemm(false, false, d.sq, d.dh, d.sk, 1.0f, f(t, kP), d.sk, f(t, values), d.dh, 0.0f,
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
      const bool grouped = d.kvl != d.hl;
      const int keys = grouped ? kKx : kKh, values = grouped ? kVx : kVh;
      const int dkeys = grouped ? kdKx : kdKh, dvalues = grouped ? kdVx : kdVh;
      be.gemm(false, true, d.n * d.sq, d.el, d.e, 1.0f, dy, d.e, t.in[6]->f(), d.e, 0.0f, f(t, kdO),
              d.el);
      if (t.in[6]->grad)
        be.gemm(true, false, d.el, d.e, d.n * d.sq, 1.0f, f(t, kO), d.el, dy, d.e, 1.0f,
                t.in[6]->grad, d.e);
      be.transpose(f(t, kdO), f(t, kdOh), {d.n, d.sq, d.hl, d.dh}, {0, 2, 1, 3}, 4, false);
      be.gemm(false, true, d.sq, d.sk, d.dh, 1.0f, f(t, kdOh), d.dh, f(t, values), d.dh, 0.0f,
              f(t, kdP), d.sk, batch, d.sq * d.dh, d.sk * d.dh, d.sq * d.sk);
      be.gemm(true, false, d.sk, d.dh, d.sq, 1.0f, f(t, kP), d.sk, f(t, kdOh), d.dh, 0.0f,
              f(t, dvalues), d.dh, batch, d.sq * d.sk, d.sq * d.dh, d.sk * d.dh);
      be.fill_zero(f(t, kdS), static_cast<std::size_t>(batch * d.sq * d.sk) * 4);
      be.softmax_backward(f(t, kP), f(t, kdP), f(t, kdS), batch * d.sq, d.sk, 1);
      be.gemm(false, false, d.sq, d.dh, d.sk, scale, f(t, kdS), d.sk, f(t, keys), d.dh, 0.0f,
              f(t, kdQh), d.dh, batch, d.sq * d.sk, d.sk * d.dh, d.sq * d.dh);
      be.gemm(true, false, d.sk, d.dh, d.sq, scale, f(t, kdS), d.sk, f(t, kQh), d.dh, 0.0f,
              f(t, dkeys), d.dh, batch, d.sq * d.sk, d.sq * d.dh, d.sk * d.dh);
      if (grouped) {
        sum_repeats(be, t, kdKx, kdKh, d.sk, d);
        sum_repeats(be, t, kdVx, kdVh, d.sk, d);
      }
      if (rotary_) {  // a rotation's transpose rotates back
        rotate(be, t, kdQh, d.n * d.hl, d.sq, d.offset, d, true);
        rotate(be, t, kdKh, d.n * d.kvl, d.sk, 0, d, true);
      }
      unproject(be, t, 0, 3, kdQh, kdQ, d.sq, d.el, d);
      unproject(be, t, 1, 4, kdKh, kdK, d.sk, d.elk, d);
      unproject(be, t, 2, 5, kdVh, kdV, d.sk, d.elk, d);
    }
  }

 private:
  struct D {
    i64 n, sq, sk, e;
    i64 offset;   // the absolute position of this task's first query (context parallelism)
    i64 el, elk;  // this task's query heads, and key/value heads, times the head size
    i64 dh, hl, kvl;
  };
  static float* f(TaskBuffers& t, int i) { return static_cast<float*>(t.scratch[i]); }

  D dims(const TaskBuffers& t) const {
    D d;
    d.n = t.in[0]->shape[0];
    d.sq = t.in[0]->shape[1];
    d.sk = t.in[1]->shape[1];
    d.offset = t.task->inputs[0].region.begin[1];
    d.e = t.in[0]->shape[2];
    d.el = t.in[3]->shape[1];
    d.elk = t.in[4]->shape[1];
    d.dh = head_dim_ > 0 ? head_dim_ : d.e / heads_;
    d.hl = d.el / d.dh;
    d.kvl = d.elk / d.dh;
    return d;
  }

  // X [n*s, E] @ W [E, width] -> [n, s, width / dh, dh] -> heads [n, width / dh, s, dh].
  static void project(DeviceBackend& be, TaskBuffers& t, int x, int w, int flat, int heads, i64 s,
                      i64 width, const D& d) {
    be.gemm(false, false, d.n * s, width, d.e, 1.0f, t.in[x]->f(), d.e, t.in[w]->f(), width, 0.0f,
            f(t, flat), width);
    be.transpose(f(t, flat), f(t, heads), {d.n, s, width / d.dh, d.dh}, {0, 2, 1, 3}, 4, false);
  }

  // The gradient of project(): heads back to [n*s, width], then into W and X.
  static void unproject(DeviceBackend& be, TaskBuffers& t, int x, int w, int heads, int flat, i64 s,
                        i64 width, const D& d) {
    be.transpose(f(t, heads), f(t, flat), {d.n, width / d.dh, s, d.dh}, {0, 2, 1, 3}, 4, false);
    if (t.in[w]->grad)
      be.gemm(true, false, d.e, width, d.n * s, 1.0f, t.in[x]->f(), d.e, f(t, flat), width, 1.0f,
              t.in[w]->grad, width);
    if (t.in[x]->grad)
      be.gemm(false, true, d.n * s, d.e, width, 1.0f, f(t, flat), width, t.in[w]->f(), width, 1.0f,
              t.in[x]->grad, d.e);
  }

  // Grouped-query attention: query head j reads key/value head j / (hl / kvl), so each key/value
  // head is repeated for its hl / kvl query heads, [n, kvl, s*dh] -> [n, kvl, r, s*dh]. Returns the
  // buffer the attention reads (the heads themselves when every query head has its own).
  static int repeat_heads(DeviceBackend& be, TaskBuffers& t, int heads, int repeated, i64 s,
                          const D& d) {
    if (d.kvl == d.hl) return heads;
    const i64 r = d.hl / d.kvl;
    be.fill_zero(f(t, repeated), static_cast<std::size_t>(d.n * d.hl * s * d.dh) * 4);
    be.reduce_sum_backward(f(t, heads), f(t, repeated), {d.n, d.kvl, r, s * d.dh},
                           {d.n, d.kvl, 1, s * d.dh}, 1.0f);
    return repeated;
  }

  // The gradient of repeat_heads(): each key/value head sums its query heads' gradients.
  static void sum_repeats(DeviceBackend& be, TaskBuffers& t, int repeated, int heads, i64 s,
                          const D& d) {
    const i64 r = d.hl / d.kvl;
    be.reduce_sum(f(t, repeated), f(t, heads), {d.n, d.kvl, r, s * d.dh}, {d.n, d.kvl, 1, s * d.dh},
                  1.0f);
  }

  // Rotary position embeddings in the half-split form (Llama, GPT-NeoX, Hugging Face): element i
  // of a head's first half and element i of its second half are rotated by the angle
  // position / base^(2i / dh): y = x cos + rotate_half(x) sin, rotate_half(x) = [-x2, x1]. The
  // tables hold one row per position up to the last query or key this task rotates.
  static i64 table_rows(const D& d) { return std::max(d.offset + d.sq, d.sk); }

  void upload_rotary_tables(DeviceBackend& be, TaskBuffers& t, const D& d) const {
    const i64 rows = table_rows(d), half = d.dh / 2;
    std::vector<float> cos_table(static_cast<std::size_t>(rows * d.dh));
    std::vector<float> sin_swap(cos_table.size());
    for (i64 p = 0; p < rows; ++p) {
      for (i64 i = 0; i < half; ++i) {
        const double angle =
            static_cast<double>(p) *
            std::pow(rotary_base_, -2.0 * static_cast<double>(i) / static_cast<double>(d.dh));
        const auto at = static_cast<std::size_t>(p * d.dh + i);
        cos_table[at] = cos_table[at + static_cast<std::size_t>(half)] =
            static_cast<float>(std::cos(angle));
        sin_swap[at] = static_cast<float>(-std::sin(angle));
        sin_swap[at + static_cast<std::size_t>(half)] = static_cast<float>(std::sin(angle));
      }
    }
    be.to_device(f(t, kCos), cos_table.data(), cos_table.size() * sizeof(float));
    be.to_device(f(t, kSinSwap), sin_swap.data(), sin_swap.size() * sizeof(float));
  }

  // Rotates the heads in buffer `heads` ([heads_count, s, dh], at positions first, first + 1, ...)
  // in place; `back` applies the transpose (the inverse rotation), which is what the gradient
  // takes: x cos - rotate_half(x) sin.
  static void rotate(DeviceBackend& be, TaskBuffers& t, int heads, i64 heads_count, i64 s,
                     i64 first, const D& d, bool back) {
    const i64 rows = heads_count * s, half = d.dh / 2, n = rows * d.dh;
    // kRot = the halves swapped, [x2, x1].
    for (int from = 0; from < 2; ++from) {
      BoxCopy c;
      c.src = f(t, heads);
      c.dst = f(t, kRot);
      c.src_shape = c.dst_shape = {rows, 2, half};
      c.src_offset = {0, from, 0};
      c.dst_offset = {0, 1 - from, 0};
      c.extent = {rows, 1, half};
      be.copy_box(c);
    }
    const BroadcastShape table{{heads_count, s, d.dh}, {heads_count, s, d.dh}, {1, s, d.dh}};
    be.binary(BinaryKind::Mul, table, f(t, heads), f(t, kCos) + first * d.dh, f(t, heads));
    be.binary(BinaryKind::Mul, table, f(t, kRot), f(t, kSinSwap) + first * d.dh, f(t, kRot));
    be.axpy(back ? -1.0f : 1.0f, f(t, kRot), f(t, heads), n);
  }

  i64 heads_;
  i64 head_dim_;  // 0: the embedding size over the heads
  bool causal_;
  i64 window_;
  bool rotary_;
  double rotary_base_;
};

}  // namespace

static std::unique_ptr<OpRunner> make_attention_runner(const Graph&, const Node& n) {
  return std::make_unique<AttentionRunner>(n);
}

UNITY_REGISTER_KERNEL(make_attention_runner, OpType::MultiHeadAttention)

}  // namespace unity::executor::detail
