// Experts as a grouped GEMM, the way Megatron-Core and torchtitan run a mixture-of-experts layer
// and the cost model prices it (task_work's Experts): the routed copies of the tokens are
// gathered into expert order, each expert multiplies its rows by its weights (up, and gate for
// SwiGLU, then down), and the outputs, weighted by their gates, are added back to their tokens.
// The arithmetic is the core's (unity/core/ops/experts_kernels.h, which the rule evaluator runs):
// only the picked experts (a non-zero gate) run, and an unpicked expert's gate gets no gradient.
// A block of experts or of the FFN width gives the task's partial sums of y.
//
// The routing is data: each task copies its gates to the host to find each expert's rows (a
// [tokens, experts] table, small beside the activations), as the dispatchers copy their token
// counts to the host before the grouped GEMM.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernel_registry.h"
#include "op_helpers.h"

namespace unity::executor::detail {
namespace {

// What a task keeps between its forward and backward passes; R rows at most (each token's picked
// experts among the task's).
enum Buf {
  kIndex,    // int64 [R]: the token of each routed row, in expert order
  kGate,     // [R]: its gate
  kRouted,   // [R, H]: the routed copies of the tokens
  kUp,       // [R, F]: x w1 (the activation's input)
  kLinear,   // [R, F]: x w3 (SwiGLU's linear half)
  kSigmoid,  // [R, F]: sigmoid(x w1) (SwiGLU)
  kAct,      // [R, F]: silu(x w1) (SwiGLU)
  kHidden,   // [R, F]: the down projection's input
  kOut,      // [R, H]: each row's expert output, before its gate
  kRowsH,    // [R, H]: scratch (weighted outputs; output gradients)
  kRowsH2,   // [R, H]: scratch (input gradients)
  kRowsF,    // [R, F]: scratch (the hidden's gradient)
  kRowsF2,   // [R, F]: scratch (the up projection's gradient)
  kRowsF3,   // [R, F]: scratch (the linear half's gradient)
  kRowsF4,   // [R, F]: scratch (the sigmoid's gradient)
  kDot,      // [R]: each row's gate gradient
  kCount
};

struct Dims {
  i64 tokens = 0, hidden = 0, experts = 0, ffn = 0, rows = 0;  // rows: R, the most routed rows
};

class ExpertsRunner final : public OpRunner {
 public:
  explicit ExpertsRunner(const Node& n)
      : gated_(n.inputs.size() == 5), top_k_(n.op.attrs.get_int("top_k", 0)) {}

  void prepare(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    routes_.resize(tasks.size());
    capacity_.assign(tasks.size(), 0);
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      tasks[i].scratch.assign(kCount, nullptr);
      reserve(ctx, tasks[i], i, dims(tasks[i]).rows);
    }
  }

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      TaskBuffers& t = tasks[i];
      const Dims d = dims(t);
      Route& route = routes_[i];
      route = routing(be, t, d);
      reserve(ctx, t, i, route.rows());
      upload_route(be, t, route);
      const i64 r = route.rows();
      float* y = t.out[0]->f();
      be.fill_zero(y, static_cast<std::size_t>(d.tokens * d.hidden) * sizeof(float));
      if (r == 0) continue;
      const auto* index = static_cast<const std::int64_t*>(t.scratch[kIndex]);
      be.embedding(index, r, 1, false, t.in[0]->f(), 0, d.tokens, d.hidden, d.tokens,
                   f(t, kRouted));
      for_each_expert(route, [&](i64 e, i64 row, i64 n) {
        be.gemm(false, false, n, d.ffn, d.hidden, 1.0f, f(t, kRouted) + row * d.hidden, d.hidden,
                weight(t, 2, e, d), d.ffn, 0.0f, f(t, kUp) + row * d.ffn, d.ffn);
        if (gated_)
          be.gemm(false, false, n, d.ffn, d.hidden, 1.0f, f(t, kRouted) + row * d.hidden, d.hidden,
                  weight(t, 4, e, d), d.ffn, 0.0f, f(t, kLinear) + row * d.ffn, d.ffn);
      });
      const i64 rf = r * d.ffn;
      if (gated_) {
        // SwiGLU: silu(x w1) * (x w3), silu(a) = a sigmoid(a).
        be.unary(UnaryKind::Sigmoid, 0.0f, f(t, kUp), f(t, kSigmoid), rf);
        be.binary(BinaryKind::Mul, same({r, d.ffn}), f(t, kUp), f(t, kSigmoid), f(t, kAct));
        be.binary(BinaryKind::Mul, same({r, d.ffn}), f(t, kAct), f(t, kLinear), f(t, kHidden));
      } else {
        be.unary(UnaryKind::Gelu, 0.0f, f(t, kUp), f(t, kHidden), rf);
      }
      for_each_expert(route, [&](i64 e, i64 row, i64 n) {
        be.gemm(false, false, n, d.hidden, d.ffn, 1.0f, f(t, kHidden) + row * d.ffn, d.ffn,
                weight(t, 3, e, d), d.hidden, 0.0f, f(t, kOut) + row * d.hidden, d.hidden);
      });
      // Each row weighted by its gate, added back to its token.
      be.binary(BinaryKind::Mul, by_row({r, d.hidden}), f(t, kOut), f(t, kGate), f(t, kRowsH));
      be.embedding_backward(index, r, 1, false, f(t, kRowsH), 0, d.tokens, d.hidden, y);
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      TaskBuffers& t = tasks[i];
      if (!t.out[0]->grad) continue;
      const Dims d = dims(t);
      const Route& route = routes_[i];
      const i64 r = route.rows();
      if (r == 0) continue;
      const auto* index = static_cast<const std::int64_t*>(t.scratch[kIndex]);
      const i64 rf = r * d.ffn;
      float* dy = f(t, kRowsH);
      be.embedding(index, r, 1, false, t.out[0]->grad, 0, d.tokens, d.hidden, d.tokens, dy);
      if (t.in[1]->grad) add_gate_gradients(be, t, d, route, dy);
      // d(expert output) = gate x dy.
      be.binary(BinaryKind::Mul, by_row({r, d.hidden}), dy, f(t, kGate), dy);
      float* dhidden = f(t, kRowsF);
      for_each_expert(route, [&](i64 e, i64 row, i64 n) {
        if (t.in[3]->grad)
          be.gemm(true, false, d.ffn, d.hidden, n, 1.0f, f(t, kHidden) + row * d.ffn, d.ffn,
                  dy + row * d.hidden, d.hidden, 1.0f, weight_grad(t, 3, e, d), d.hidden);
        be.gemm(false, true, n, d.ffn, d.hidden, 1.0f, dy + row * d.hidden, d.hidden,
                weight(t, 3, e, d), d.hidden, 0.0f, dhidden + row * d.ffn, d.ffn);
      });
      float* dup = f(t, kRowsF2);
      float* dlinear = gated_ ? f(t, kRowsF3) : nullptr;
      be.fill_zero(dup, static_cast<std::size_t>(rf) * sizeof(float));
      if (gated_) {
        // hidden = act * linear, act = up * sigmoid(up): d(linear) = dhidden * act; then
        // d(act) = dhidden * linear, in dhidden's place; d(up) = d(act) * sigmoid plus, through
        // the sigmoid, d(act) * up * sigmoid (1 - sigmoid).
        float* dsigmoid = f(t, kRowsF4);
        be.fill_zero(dlinear, static_cast<std::size_t>(rf) * sizeof(float));
        be.fill_zero(dsigmoid, static_cast<std::size_t>(rf) * sizeof(float));
        be.binary_backward(BinaryKind::Mul, same({r, d.ffn}), f(t, kAct), f(t, kLinear), dhidden,
                           nullptr, dlinear);
        be.binary(BinaryKind::Mul, same({r, d.ffn}), dhidden, f(t, kLinear), dhidden);
        be.binary_backward(BinaryKind::Mul, same({r, d.ffn}), f(t, kUp), f(t, kSigmoid), dhidden,
                           dup, dsigmoid);
        be.unary_backward(UnaryKind::Sigmoid, 0.0f, f(t, kUp), f(t, kSigmoid), dsigmoid, dup, rf);
      } else {
        be.unary_backward(UnaryKind::Gelu, 0.0f, f(t, kUp), f(t, kHidden), dhidden, dup, rf);
      }
      float* drouted = f(t, kRowsH2);
      for_each_expert(route, [&](i64 e, i64 row, i64 n) {
        const float* xe = f(t, kRouted) + row * d.hidden;
        if (t.in[2]->grad)
          be.gemm(true, false, d.hidden, d.ffn, n, 1.0f, xe, d.hidden, dup + row * d.ffn, d.ffn,
                  1.0f, weight_grad(t, 2, e, d), d.ffn);
        if (gated_ && t.in[4]->grad)
          be.gemm(true, false, d.hidden, d.ffn, n, 1.0f, xe, d.hidden, dlinear + row * d.ffn, d.ffn,
                  1.0f, weight_grad(t, 4, e, d), d.ffn);
        if (!t.in[0]->grad) return;
        be.gemm(false, true, n, d.hidden, d.ffn, 1.0f, dup + row * d.ffn, d.ffn, weight(t, 2, e, d),
                d.ffn, 0.0f, drouted + row * d.hidden, d.hidden);
        if (gated_)
          be.gemm(false, true, n, d.hidden, d.ffn, 1.0f, dlinear + row * d.ffn, d.ffn,
                  weight(t, 4, e, d), d.ffn, 1.0f, drouted + row * d.hidden, d.hidden);
      });
      if (t.in[0]->grad)
        be.embedding_backward(index, r, 1, false, drouted, 0, d.tokens, d.hidden, t.in[0]->grad);
    }
  }

 private:
  // Each expert's rows of the routed copies: expert e holds rows [begin[e], begin[e + 1]).
  struct Route {
    std::vector<i64> begin;
    std::vector<std::int64_t> token;
    std::vector<float> gate;
    i64 rows() const { return begin.empty() ? 0 : begin.back(); }
  };

  static float* f(TaskBuffers& t, int b) { return static_cast<float*>(t.scratch[b]); }

  static BroadcastShape same(std::vector<i64> shape) { return {shape, shape, shape}; }
  // [rows, cols] by a [rows, 1] column.
  static BroadcastShape by_row(std::vector<i64> shape) { return {shape, shape, {shape[0], 1}}; }

  template <typename F>
  static void for_each_expert(const Route& route, F fn) {
    for (std::size_t e = 0; e + 1 < route.begin.size(); ++e) {
      const i64 n = route.begin[e + 1] - route.begin[e];
      if (n > 0) fn(static_cast<i64>(e), route.begin[e], n);
    }
  }

  static const float* weight(TaskBuffers& t, int slot, i64 e, const Dims& d) {
    return t.in[static_cast<std::size_t>(slot)]->f() + e * d.hidden * d.ffn;
  }
  static float* weight_grad(TaskBuffers& t, int slot, i64 e, const Dims& d) {
    return t.in[static_cast<std::size_t>(slot)]->grad + e * d.hidden * d.ffn;
  }

  // Room for `rows` routed rows in the task's buffers: sized for top_k picks a token, grown (and
  // kept for the run) where the gates pick more, as dense gates do.
  void reserve(StepContext& ctx, TaskBuffers& t, std::size_t task, i64 rows) {
    if (rows <= capacity_[task]) return;
    const Dims d = dims(t);
    const i64 rh = rows * d.hidden, rf = rows * d.ffn, g = gated_ ? rf : 0;
    const i64 sizes[kCount] = {2 * rows, rows, rh, rf, g, g, g, rf, rh, rh, rh, rf, rf, g, g, rows};
    for (int b = 0; b < kCount; ++b)
      t.scratch[static_cast<std::size_t>(b)] =
          sizes[b] ? ctx.memory.allocate_floats(sizes[b]) : nullptr;
    capacity_[task] = rows;
  }

  static void upload_route(DeviceBackend& be, TaskBuffers& t, const Route& route) {
    if (route.rows() == 0) return;
    be.to_device(t.scratch[kIndex], route.token.data(), route.token.size() * sizeof(std::int64_t));
    be.to_device(t.scratch[kGate], route.gate.data(), route.gate.size() * sizeof(float));
  }

  // The task's routing from its gates: each expert's tokens (a non-zero gate), in token order.
  static Route routing(DeviceBackend& be, const TaskBuffers& t, const Dims& d) {
    const auto gates = host_copy(be, t.in[1]->value, d.tokens * d.experts);
    Route route;
    route.begin.push_back(0);
    std::vector<float> gate;
    for (i64 e = 0; e < d.experts; ++e) {
      for (i64 k = 0; k < d.tokens; ++k) {
        const float g = gates[static_cast<std::size_t>(k * d.experts + e)];
        if (g == 0.0f) continue;
        route.token.push_back(k);
        gate.push_back(g);
      }
      route.begin.push_back(static_cast<i64>(route.token.size()));
    }
    route.gate = std::move(gate);
    return route;
  }

  // d(gate) of each routed row = its expert output . dy, added to the gates' gradient.
  void add_gate_gradients(DeviceBackend& be, TaskBuffers& t, const Dims& d, const Route& route,
                          const float* dy) const {
    const i64 r = route.rows();
    be.binary(BinaryKind::Mul, same({r, d.hidden}), f(t, kOut), dy, f(t, kRowsH2));
    be.reduce_sum(f(t, kRowsH2), f(t, kDot), {r, d.hidden}, {r, 1}, 1.0f);
    const auto dot = host_copy(be, f(t, kDot), r);
    auto grads = host_copy(be, t.in[1]->grad, d.tokens * d.experts);
    for (std::size_t e = 0; e + 1 < route.begin.size(); ++e)
      for (i64 row = route.begin[e]; row < route.begin[e + 1]; ++row)
        grads[static_cast<std::size_t>(route.token[static_cast<std::size_t>(row)] * d.experts +
                                       static_cast<i64>(e))] += dot[static_cast<std::size_t>(row)];
    upload(be, t.in[1]->grad, grads);
  }

  Dims dims(const TaskBuffers& t) const {
    const auto& xs = t.in[0]->shape;
    const auto& w1 = t.in[2]->shape;
    Dims d;
    d.hidden = xs.back();
    d.tokens = t.in[0]->elements() / d.hidden;
    d.experts = w1[0];
    d.ffn = w1[2];
    // Each token picks top_k experts of the layer, so at most min(top_k, experts) of the task's.
    const i64 picks = top_k_ > 0 ? std::min<i64>(top_k_, d.experts) : d.experts;
    d.rows = d.tokens * picks;  // the most a router's top-k picks route
    return d;
  }

  bool gated_;
  std::int64_t top_k_;
  std::vector<Route> routes_;  // per task, from its forward pass
  std::vector<i64> capacity_;  // per task, the routed rows its buffers hold
};

}  // namespace

static std::unique_ptr<OpRunner> make_experts_runner(const Graph&, const Node& n) {
  return std::make_unique<ExpertsRunner>(n);
}

UNITY_REGISTER_KERNEL(make_experts_runner, OpType::Experts)

}  // namespace unity::executor::detail
