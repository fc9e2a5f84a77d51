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
//
// Expert parallelism beyond a stage replica (a pipelined plan's EP over data-parallel copies,
// ExpertCopies): the task's experts are split over g consecutive copies; each gathers the tokens
// and gates of the g copies (the all-gather token dispatcher), runs its 1/g of the experts on all
// of them, and the partial outputs are reduce-scattered back to their copies; the backward pass
// gathers the output gradients and reduce-scatters the input and gate gradients the same way.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "kernel_registry.h"
#include "op_helpers.h"

namespace unity::executor::detail {
namespace {

// What a task keeps between its forward and backward passes, for R routed rows at most.
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
  // With the experts spread over g copies: the g copies' tokens [gT, H] and gates [gT, E]
  // gathered, the partial outputs of all of them (in the backward pass the input gradients),
  // their output gradients and gate gradients, and this copy's share of the sums [T, H], [T, E].
  kAllX,
  kAllGates,
  kAllOut,
  kAllDy,
  kAllDgates,
  kMineH,
  kMineGates,
  kCount
};

struct Dims {
  i64 tokens = 0, hidden = 0, experts = 0, ffn = 0;  // the task's own tokens and experts
};

// What a task computes on: the tokens and gates it sees (its own, or its copies' gathered) and
// the block of its experts it runs, columns [first, first + experts) of the gates.
struct View {
  const float* x = nullptr;
  const float* gates = nullptr;
  i64 tokens = 0, first = 0, experts = 0;
};

// The copies a task's experts spread over: g of them (1: none), this one the index-th.
struct Spread {
  int g = 1, index = 0;
  std::vector<int> group;  // world ranks, copy order
};

// Each expert's rows of the routed copies: expert e holds rows [begin[e], begin[e + 1]).
struct Route {
  std::vector<i64> begin;
  std::vector<std::int64_t> token;
  std::vector<float> gate;
  i64 rows() const { return begin.empty() ? 0 : begin.back(); }
};

class ExpertsRunner final : public OpRunner {
 public:
  ExpertsRunner(const Graph& g, const Node& n)
      : gated_(n.inputs.size() == 5),
        top_k_(n.op.attrs.get_int("top_k", 0)),
        experts_(g.shape(n.inputs[2]).dims[0].size) {}

  void prepare(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    routes_.resize(tasks.size());
    capacity_.assign(tasks.size(), 0);
    spreads_.assign(tasks.size(), std::nullopt);
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      TaskBuffers& t = tasks[i];
      const Dims d = dims(t);
      t.scratch.assign(kCount, nullptr);
      // Each token picks top_k experts of the layer: at most min(top_k, experts) of the task's.
      reserve(ctx, t, i, d.tokens * (top_k_ > 0 ? std::min<i64>(top_k_, d.experts) : d.experts));
    }
  }

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      TaskBuffers& t = tasks[i];
      const Dims d = dims(t);
      const Spread& sp = spread_of(ctx, t, i);
      View v{t.in[0]->f(), t.in[1]->f(), d.tokens, 0, d.experts};
      float* out = t.out[0]->f();
      if (sp.g > 1) {
        gather(ctx, sp, t.in[0]->f(), f(t, kAllX), d.tokens * d.hidden);
        gather(ctx, sp, t.in[1]->f(), f(t, kAllGates), d.tokens * d.experts);
        v = {f(t, kAllX), f(t, kAllGates), sp.g * d.tokens, sp.index * d.experts / sp.g,
             d.experts / sp.g};
        out = f(t, kAllOut);
      }
      Route& route = routes_[i];
      route = routing(be, v, d.experts);
      reserve(ctx, t, i, route.rows());
      upload_route(be, t, route);
      be.fill_zero(out, static_cast<std::size_t>(v.tokens * d.hidden) * sizeof(float));
      if (route.rows() > 0) run_forward(be, t, d, v, route, out);
      if (sp.g > 1) scatter(ctx, sp, out, t.out[0]->f(), d.tokens * d.hidden);
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      TaskBuffers& t = tasks[i];
      if (!t.out[0]->grad) continue;
      const Dims d = dims(t);
      const Spread& sp = spread_of(ctx, t, i);
      View v{t.in[0]->f(), t.in[1]->f(), d.tokens, 0, d.experts};
      const float* dy = t.out[0]->grad;
      float* dx = t.in[0]->grad;
      float* dgates = t.in[1]->grad;
      if (sp.g > 1) {
        gather(ctx, sp, dy, f(t, kAllDy), d.tokens * d.hidden);
        v = {f(t, kAllX), f(t, kAllGates), sp.g * d.tokens, sp.index * d.experts / sp.g,
             d.experts / sp.g};
        dy = f(t, kAllDy);
        // The copies' sums: zeroed here, this copy's experts' share added, reduce-scattered.
        if (dx) {
          dx = f(t, kAllOut);
          be.fill_zero(dx, static_cast<std::size_t>(v.tokens * d.hidden) * sizeof(float));
        }
        if (dgates) {
          dgates = f(t, kAllDgates);
          be.fill_zero(dgates, static_cast<std::size_t>(v.tokens * d.experts) * sizeof(float));
        }
      }
      const Route& route = routes_[i];
      if (route.rows() > 0) run_backward(be, t, d, v, route, dy, dx, dgates);
      if (sp.g > 1) {
        if (dx) add_scattered(ctx, sp, dx, f(t, kMineH), t.in[0]->grad, d.tokens * d.hidden);
        if (dgates)
          add_scattered(ctx, sp, dgates, f(t, kMineGates), t.in[1]->grad, d.tokens * d.experts);
      }
    }
  }

 private:
  static float* f(TaskBuffers& t, int b) { return static_cast<float*>(t.scratch[b]); }
  static const std::int64_t* index(TaskBuffers& t) {
    return static_cast<const std::int64_t*>(t.scratch[kIndex]);
  }

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

  // Expert e of the view's block: its weights in input `slot`.
  static const float* weight(TaskBuffers& t, int slot, const View& v, i64 e, const Dims& d) {
    return t.in[static_cast<std::size_t>(slot)]->f() + (v.first + e) * d.hidden * d.ffn;
  }
  static float* weight_grad(TaskBuffers& t, int slot, const View& v, i64 e, const Dims& d) {
    return t.in[static_cast<std::size_t>(slot)]->grad + (v.first + e) * d.hidden * d.ffn;
  }

  void run_forward(DeviceBackend& be, TaskBuffers& t, const Dims& d, const View& v,
                   const Route& route, float* out) {
    const i64 r = route.rows();
    be.embedding(index(t), r, 1, false, v.x, 0, v.tokens, d.hidden, v.tokens, f(t, kRouted));
    for_each_expert(route, [&](i64 e, i64 row, i64 n) {
      be.gemm(false, false, n, d.ffn, d.hidden, 1.0f, f(t, kRouted) + row * d.hidden, d.hidden,
              weight(t, 2, v, e, d), d.ffn, 0.0f, f(t, kUp) + row * d.ffn, d.ffn);
      if (gated_)
        be.gemm(false, false, n, d.ffn, d.hidden, 1.0f, f(t, kRouted) + row * d.hidden, d.hidden,
                weight(t, 4, v, e, d), d.ffn, 0.0f, f(t, kLinear) + row * d.ffn, d.ffn);
    });
    if (gated_) {
      // SwiGLU: silu(x w1) * (x w3), silu(a) = a sigmoid(a).
      be.unary(UnaryKind::Sigmoid, 0.0f, f(t, kUp), f(t, kSigmoid), r * d.ffn);
      be.binary(BinaryKind::Mul, same({r, d.ffn}), f(t, kUp), f(t, kSigmoid), f(t, kAct));
      be.binary(BinaryKind::Mul, same({r, d.ffn}), f(t, kAct), f(t, kLinear), f(t, kHidden));
    } else {
      be.unary(UnaryKind::Gelu, 0.0f, f(t, kUp), f(t, kHidden), r * d.ffn);
    }
    for_each_expert(route, [&](i64 e, i64 row, i64 n) {
      be.gemm(false, false, n, d.hidden, d.ffn, 1.0f, f(t, kHidden) + row * d.ffn, d.ffn,
              weight(t, 3, v, e, d), d.hidden, 0.0f, f(t, kOut) + row * d.hidden, d.hidden);
    });
    // Each row weighted by its gate, added back to its token.
    be.binary(BinaryKind::Mul, by_row({r, d.hidden}), f(t, kOut), f(t, kGate), f(t, kRowsH));
    be.embedding_backward(index(t), r, 1, false, f(t, kRowsH), 0, v.tokens, d.hidden, out);
  }

  // Adds into dx [view tokens, H] and dgates [view tokens, E] (either may be null) and the
  // weights' gradients of the view's experts.
  void run_backward(DeviceBackend& be, TaskBuffers& t, const Dims& d, const View& v,
                    const Route& route, const float* dy_tokens, float* dx, float* dgates) {
    const i64 r = route.rows();
    const i64 rf = r * d.ffn;
    float* dy = f(t, kRowsH);
    be.embedding(index(t), r, 1, false, dy_tokens, 0, v.tokens, d.hidden, v.tokens, dy);
    if (dgates) add_gate_gradients(be, t, d, v, route, dy, dgates);
    // d(expert output) = gate x dy.
    be.binary(BinaryKind::Mul, by_row({r, d.hidden}), dy, f(t, kGate), dy);
    float* dhidden = f(t, kRowsF);
    for_each_expert(route, [&](i64 e, i64 row, i64 n) {
      if (t.in[3]->grad)
        be.gemm(true, false, d.ffn, d.hidden, n, 1.0f, f(t, kHidden) + row * d.ffn, d.ffn,
                dy + row * d.hidden, d.hidden, 1.0f, weight_grad(t, 3, v, e, d), d.hidden);
      be.gemm(false, true, n, d.ffn, d.hidden, 1.0f, dy + row * d.hidden, d.hidden,
              weight(t, 3, v, e, d), d.hidden, 0.0f, dhidden + row * d.ffn, d.ffn);
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
      be.binary_backward(BinaryKind::Mul, same({r, d.ffn}), f(t, kUp), f(t, kSigmoid), dhidden, dup,
                         dsigmoid);
      be.unary_backward(UnaryKind::Sigmoid, 0.0f, f(t, kUp), f(t, kSigmoid), dsigmoid, dup, rf);
    } else {
      be.unary_backward(UnaryKind::Gelu, 0.0f, f(t, kUp), f(t, kHidden), dhidden, dup, rf);
    }
    float* drouted = f(t, kRowsH2);
    for_each_expert(route, [&](i64 e, i64 row, i64 n) {
      const float* xe = f(t, kRouted) + row * d.hidden;
      if (t.in[2]->grad)
        be.gemm(true, false, d.hidden, d.ffn, n, 1.0f, xe, d.hidden, dup + row * d.ffn, d.ffn, 1.0f,
                weight_grad(t, 2, v, e, d), d.ffn);
      if (gated_ && t.in[4]->grad)
        be.gemm(true, false, d.hidden, d.ffn, n, 1.0f, xe, d.hidden, dlinear + row * d.ffn, d.ffn,
                1.0f, weight_grad(t, 4, v, e, d), d.ffn);
      if (!dx) return;
      be.gemm(false, true, n, d.hidden, d.ffn, 1.0f, dup + row * d.ffn, d.ffn,
              weight(t, 2, v, e, d), d.ffn, 0.0f, drouted + row * d.hidden, d.hidden);
      if (gated_)
        be.gemm(false, true, n, d.hidden, d.ffn, 1.0f, dlinear + row * d.ffn, d.ffn,
                weight(t, 4, v, e, d), d.ffn, 1.0f, drouted + row * d.hidden, d.hidden);
    });
    if (dx) be.embedding_backward(index(t), r, 1, false, drouted, 0, v.tokens, d.hidden, dx);
  }

  // Room for `rows` routed rows in the task's buffers: sized for top_k picks a token, grown (and
  // kept for the run) where the gates pick more, as dense gates do.
  void reserve(StepContext& ctx, TaskBuffers& t, std::size_t task, i64 rows) {
    if (rows <= capacity_[task]) return;
    const Dims d = dims(t);
    const i64 rh = rows * d.hidden, rf = rows * d.ffn, g = gated_ ? rf : 0;
    const i64 sizes[kCount] = {2 * rows, rows, rh, rf, g, g, g, rf, rh, rh, rh, rf, rf, g, g, rows};
    for (int b = 0; b < kAllX; ++b)
      t.scratch[static_cast<std::size_t>(b)] =
          sizes[b] ? ctx.memory.allocate_floats(sizes[b]) : nullptr;
    capacity_[task] = rows;
  }

  static void upload_route(DeviceBackend& be, TaskBuffers& t, const Route& route) {
    if (route.rows() == 0) return;
    be.to_device(t.scratch[kIndex], route.token.data(), route.token.size() * sizeof(std::int64_t));
    be.to_device(t.scratch[kGate], route.gate.data(), route.gate.size() * sizeof(float));
  }

  // The view's routing from its gates (`columns` a row): each of its experts' tokens (a non-zero
  // gate), in token order.
  static Route routing(DeviceBackend& be, const View& v, i64 columns) {
    const auto gates = host_copy(be, v.gates, v.tokens * columns);
    Route route;
    route.begin.push_back(0);
    for (i64 e = v.first; e < v.first + v.experts; ++e) {
      for (i64 k = 0; k < v.tokens; ++k) {
        const float g = gates[static_cast<std::size_t>(k * columns + e)];
        if (g == 0.0f) continue;
        route.token.push_back(k);
        route.gate.push_back(g);
      }
      route.begin.push_back(static_cast<i64>(route.token.size()));
    }
    return route;
  }

  // d(gate) of each routed row = its expert output . dy, added to dgates [view tokens, E].
  void add_gate_gradients(DeviceBackend& be, TaskBuffers& t, const Dims& d, const View& v,
                          const Route& route, const float* dy, float* dgates) const {
    const i64 r = route.rows();
    be.binary(BinaryKind::Mul, same({r, d.hidden}), f(t, kOut), dy, f(t, kRowsH2));
    be.reduce_sum(f(t, kRowsH2), f(t, kDot), {r, d.hidden}, {r, 1}, 1.0f);
    const auto dot = host_copy(be, f(t, kDot), r);
    auto grads = host_copy(be, dgates, v.tokens * d.experts);
    for (std::size_t e = 0; e + 1 < route.begin.size(); ++e)
      for (i64 row = route.begin[e]; row < route.begin[e + 1]; ++row) {
        const i64 token = route.token[static_cast<std::size_t>(row)];
        grads[static_cast<std::size_t>(token * d.experts + v.first + static_cast<i64>(e))] +=
            dot[static_cast<std::size_t>(row)];
      }
    upload(be, dgates, grads);
  }

  // Task i's spread, found at its first pass (the engine's copies are set after its steps are
  // prepared), with the buffers it needs.
  const Spread& spread_of(StepContext& ctx, TaskBuffers& t, std::size_t i) {
    if (spreads_[i]) return *spreads_[i];
    const Dims d = dims(t);
    spreads_[i] = spread(ctx, d);
    const i64 g = spreads_[i]->g;
    if (g > 1) {
      const i64 all = g * d.tokens;
      const i64 sizes[] = {all * d.hidden,      all * d.experts, all * d.hidden,
                           all * d.hidden,      all * d.experts, d.tokens * d.hidden,
                           d.tokens * d.experts};
      for (int b = kAllX; b < kCount; ++b)
        t.scratch[static_cast<std::size_t>(b)] = ctx.memory.allocate_floats(sizes[b - kAllX]);
    }
    return *spreads_[i];
  }

  // The copies this task's experts spread over: the plan's EP over the replica's own split of
  // them, in groups of consecutive copies.
  Spread spread(const StepContext& ctx, const Dims& d) const {
    Spread s;
    const ExpertCopies* c = ctx.expert_copies;
    if (!c) return s;
    const i64 held = experts_ / d.experts;
    if (c->expert_parallel <= held || c->expert_parallel % held != 0) return s;
    s.g = static_cast<int>(c->expert_parallel / held);
    const int copies = static_cast<int>(c->copy_ranks.size());
    if (copies % s.g != 0 || d.experts % s.g != 0)
      throw LoweringError(fmt::format(
          "expert parallelism {} spreads {} experts a device over {} data-parallel copies, which "
          "do not split into groups of {} copies with a whole share of the experts each",
          c->expert_parallel, d.experts, copies, s.g));
    const int first = c->copy / s.g * s.g;
    s.index = c->copy - first;
    s.group.assign(c->copy_ranks.begin() + first, c->copy_ranks.begin() + first + s.g);
    return s;
  }

  // The group's `count` floats each, gathered in copy order; and this copy's share of `all` (g
  // blocks of `count`) summed over the group.
  static void gather(StepContext& ctx, const Spread& s, const float* mine, float* all, i64 count) {
    ctx.expert_copies->world->all_gather(s.group, mine, all, count);
    ctx.expert_copies->bytes_sent += static_cast<double>((s.g - 1) * count) * sizeof(float);
  }
  static void scatter(StepContext& ctx, const Spread& s, const float* all, float* mine, i64 count) {
    ctx.expert_copies->world->reduce_scatter(s.group, all, mine, count);
    ctx.expert_copies->bytes_sent += static_cast<double>((s.g - 1) * count) * sizeof(float);
  }
  // As scatter, added into `into` (a gradient) through `staging`.
  static void add_scattered(StepContext& ctx, const Spread& s, const float* all, float* staging,
                            float* into, i64 count) {
    scatter(ctx, s, all, staging, count);
    ctx.backend.axpy(1.0f, staging, into, count);
  }

  static Dims dims(const TaskBuffers& t) {
    const auto& xs = t.in[0]->shape;
    const auto& w1 = t.in[2]->shape;
    Dims d;
    d.hidden = xs.back();
    d.tokens = t.in[0]->elements() / d.hidden;
    d.experts = w1[0];
    d.ffn = w1[2];
    return d;
  }

  bool gated_;
  std::int64_t top_k_;
  std::int64_t experts_;                        // the layer's
  std::vector<Route> routes_;                   // per task, from its forward pass
  std::vector<i64> capacity_;                   // per task, the routed rows its buffers hold
  std::vector<std::optional<Spread>> spreads_;  // per task, from its first pass
};

}  // namespace

static std::unique_ptr<OpRunner> make_experts_runner(const Graph& g, const Node& n) {
  return std::make_unique<ExpertsRunner>(g, n);
}

UNITY_REGISTER_KERNEL(make_experts_runner, OpType::Experts)

}  // namespace unity::executor::detail
