// Unary, Dropout and broadcasting binary operators.
#include <optional>

#include <fmt/format.h>

#include "kernel_registry.h"
#include "op_helpers.h"
#include "unity/core/ops/mask_kernels.h"
#include "unity/core/ops/operator_definition.h"

namespace unity::executor::detail {

std::optional<UnaryKind> unary_kind(OpType t) {
  switch (t) {
    case OpType::Relu:
      return UnaryKind::Relu;
    case OpType::Gelu:
      return UnaryKind::Gelu;
    case OpType::Sigmoid:
      return UnaryKind::Sigmoid;
    case OpType::Tanh:
      return UnaryKind::Tanh;
    case OpType::Exp:
      return UnaryKind::Exp;
    case OpType::Sqrt:
      return UnaryKind::Sqrt;
    case OpType::Erf:
      return UnaryKind::Erf;
    case OpType::ScalarAdd:
      return UnaryKind::ScalarAdd;
    case OpType::ScalarMul:
      return UnaryKind::ScalarMul;
    case OpType::Pow:
      return UnaryKind::Pow;
    case OpType::Identity:
      return UnaryKind::Identity;
    default:
      return std::nullopt;
  }
}

namespace {

class UnaryRunner final : public OpRunner {
 public:
  UnaryRunner(const Node& n, UnaryKind kind)
      : kind_(kind), scalar_(static_cast<float>(n.op.attrs.get_double("scalar", 0.0))) {}
  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks)
      ctx.backend.unary(kind_, scalar_, t.in[0]->f(), t.out[0]->f(), t.out[0]->elements());
  }
  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      if (!t.in[0]->grad || !t.out[0]->grad) continue;
      ctx.backend.unary_backward(kind_, scalar_, t.in[0]->f(), t.out[0]->f(), t.out[0]->grad,
                                 t.in[0]->grad, t.out[0]->elements());
    }
  }

 private:
  UnaryKind kind_;
  float scalar_;
};

class DropoutRunner final : public OpRunner {
 public:
  explicit DropoutRunner(const Node& n) : rate_(n.op.attrs.get_double("rate", 0.0)) {}
  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      if (!active(ctx)) {
        ctx.backend.copy(t.out[0]->value, t.in[0]->value,
                         static_cast<std::size_t>(t.out[0]->elements()) * 4);
        continue;
      }
      ctx.backend.dropout(spec(ctx, *t.out[0]), t.in[0]->f(), t.out[0]->f());
    }
  }
  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      if (!t.in[0]->grad || !t.out[0]->grad) continue;
      if (!active(ctx))
        ctx.backend.axpy(1.0f, t.out[0]->grad, t.in[0]->grad, t.out[0]->elements());
      else
        ctx.backend.dropout_backward(spec(ctx, *t.out[0]), t.out[0]->grad, t.in[0]->grad);
    }
  }

 private:
  bool active(const StepContext& ctx) const { return ctx.training && rate_ > 0; }
  DropoutSpec spec(const StepContext& ctx, const Slot& out) const {
    DropoutSpec s = global_numbering(ctx, out);
    s.rate = rate_;
    return s;
  }
  double rate_;
};

class BinaryRunner final : public OpRunner {
 public:
  explicit BinaryRunner(const Node& n) {
    switch (n.op.type) {
      case OpType::Sub:
        kind_ = BinaryKind::Sub;
        break;
      case OpType::Mul:
        kind_ = BinaryKind::Mul;
        break;
      case OpType::Div:
        kind_ = BinaryKind::Div;
        break;
      default:
        kind_ = BinaryKind::Add;
    }
  }
  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      if (t.out[0]->elem_size == 8)
        integer_forward(ctx.backend, t);
      else
        ctx.backend.binary(kind_, shapes(t), t.in[0]->f(), t.in[1]->f(), t.out[0]->f());
    }
  }
  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      if (!t.out[0]->grad || (!t.in[0]->grad && !t.in[1]->grad)) continue;
      ctx.backend.binary_backward(kind_, shapes(t), t.in[0]->f(), t.in[1]->f(), t.out[0]->grad,
                                  t.in[0]->grad, t.in[1]->grad);
    }
  }

 private:
  // Integer operands (index arithmetic: a flat index from a row and a column) on the host in
  // int64, as C computes them: two's-complement wraparound, division toward zero (by zero: 0, which
  // ONNX leaves undefined), each result wrapped into the output's type (uint8 modulo 256).
  void integer_forward(DeviceBackend& be, TaskBuffers& t) const {
    using U = std::uint64_t;
    const auto a = host_ints(be, *t.in[0]);
    const auto b = host_ints(be, *t.in[1]);
    const Slot& out = *t.out[0];
    std::vector<std::int64_t> y(static_cast<std::size_t>(out.elements()));
    mask_kernels::for_each_broadcast(
        out.shape, {t.in[0]->shape, t.in[1]->shape},
        [&](std::int64_t o, const std::vector<std::int64_t>& at) {
          const std::int64_t x = a[static_cast<std::size_t>(at[0])];
          const std::int64_t z = b[static_cast<std::size_t>(at[1])];
          std::int64_t r = 0;
          switch (kind_) {
            case BinaryKind::Add:
              r = static_cast<std::int64_t>(static_cast<U>(x) + static_cast<U>(z));
              break;
            case BinaryKind::Sub:
              r = static_cast<std::int64_t>(static_cast<U>(x) - static_cast<U>(z));
              break;
            case BinaryKind::Mul:
              r = static_cast<std::int64_t>(static_cast<U>(x) * static_cast<U>(z));
              break;
            default:  // Div
              r = z == 0    ? 0
                  : z == -1 ? static_cast<std::int64_t>(U{0} - static_cast<U>(x))
                            : x / z;
          }
          y[static_cast<std::size_t>(o)] = wrap_integer(out.dtype, r);
        });
    upload(be, out.value, y);
  }

  static BroadcastShape shapes(const TaskBuffers& t) {
    BroadcastShape s;
    s.out = t.out[0]->shape;
    auto align = [&](const std::vector<i64>& v) {
      std::vector<i64> a(s.out.size() - v.size(), 1);
      a.insert(a.end(), v.begin(), v.end());
      return a;
    };
    s.a = align(t.in[0]->shape);
    s.b = align(t.in[1]->shape);
    return s;
  }
  BinaryKind kind_;
};

// Partition, Combine, Replicate: the data movement is the request itself. Reduce and AllReduce on
// the point-to-point path: the task received every replica it sums.
class ParallelRunner final : public OpRunner {
 public:
  explicit ParallelRunner(const Node& n)
      : sums_(n.op.type == OpType::Reduce || n.op.type == OpType::AllReduce) {}
  bool output_is_input() const override { return !sums_; }
  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    if (!sums_) return;
    for (auto& t : tasks) {
      const i64 n = t.out[0]->elements();
      ctx.backend.copy(t.out[0]->value, t.in[0]->value, static_cast<std::size_t>(n) * 4);
      for (std::size_t i = 1; i < t.in.size(); ++i)
        ctx.backend.axpy(1.0f, t.in[i]->f(), t.out[0]->f(), n);
    }
  }
  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    if (!sums_) return;
    for (auto& t : tasks) {
      if (!t.out[0]->grad) continue;
      for (auto* in : t.in)
        if (in->grad) ctx.backend.axpy(1.0f, t.out[0]->grad, in->grad, t.out[0]->elements());
    }
  }

 private:
  bool sums_;
};

}  // namespace

static std::unique_ptr<OpRunner> make_elementwise_runner(const Graph& g, const Node& n) {
  if (is_elementwise_binary(n.op.type)) return std::make_unique<BinaryRunner>(n);
  if (n.op.type == OpType::Dropout) return std::make_unique<DropoutRunner>(n);
  const auto kind = unary_kind(n.op.type);
  if (!kind)
    throw LoweringError(
        fmt::format("{}: no kernel for {}", g.describe(n.id), to_string(n.op.type)));
  return std::make_unique<UnaryRunner>(n, *kind);
}

// Add, Sub, Mul, Div, Dropout, and the point-wise operators with a backend kernel (UnaryKind).
static bool runs_elementwise(OpType t) {
  return is_elementwise_binary(t) || t == OpType::Dropout || unary_kind(t).has_value();
}

static std::unique_ptr<OpRunner> make_parallel_runner(const Graph&, const Node& n) {
  return std::make_unique<ParallelRunner>(n);
}

UNITY_REGISTER_KERNEL_FAMILY(make_elementwise_runner, runs_elementwise)
UNITY_REGISTER_KERNEL_FAMILY(make_parallel_runner, is_parallel_op)

}  // namespace unity::executor::detail
