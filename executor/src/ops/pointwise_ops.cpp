// Point-wise operators that have no kernel of their own in the backends: the function and
// derivative of their core definition (unity/core/ops/operator_definition.h), evaluated on the
// host: in place where the backend's buffers are host memory (the CPU's), through staging copies
// otherwise (a GPU's, across PCIe, which is correct but slow, so an operator that models train on
// GPUs gets a backend kernel, UnaryKind).
#include <fmt/format.h>

#include "kernel_registry.h"
#include "op_helpers.h"
#include "unity/core/ops/operator_definition.h"

namespace unity::executor::detail {
namespace {

class PointwiseRunner final : public OpRunner {
 public:
  PointwiseRunner(const PointwiseFunction& f, std::vector<double> params)
      : f_(f), params_(std::move(params)) {}

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const i64 n = t.out[0]->elements();
      if (ctx.backend.host_memory()) {
        apply(t.in[0]->f(), t.out[0]->f(), n);
        continue;
      }
      std::vector<float> x = host_copy(ctx.backend, t.in[0]->value, n);
      apply(x.data(), x.data(), n);
      ctx.backend.to_device(t.out[0]->value, x.data(), x.size() * sizeof(float));
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      if (!t.in[0]->grad || !t.out[0]->grad) continue;
      const i64 n = t.out[0]->elements();
      if (ctx.backend.host_memory()) {
        accumulate_gradient(t.in[0]->f(), t.out[0]->f(), t.out[0]->grad, t.in[0]->grad, n);
        continue;
      }
      const std::vector<float> x = host_copy(ctx.backend, t.in[0]->value, n);
      const std::vector<float> y = host_copy(ctx.backend, t.out[0]->value, n);
      const std::vector<float> dy = host_copy(ctx.backend, t.out[0]->grad, n);
      std::vector<float> dx = host_copy(ctx.backend, t.in[0]->grad, n);
      accumulate_gradient(x.data(), y.data(), dy.data(), dx.data(), n);
      ctx.backend.to_device(t.in[0]->grad, dx.data(), dx.size() * sizeof(float));
    }
  }

 private:
  // y = f(x) (y may be x).
  void apply(const float* x, float* y, i64 n) const {
    for (i64 i = 0; i < n; ++i) y[i] = static_cast<float>(f_.value(x[i], params_.data()));
  }
  // Gradients accumulate: dx += dy f'(x).
  void accumulate_gradient(const float* x, const float* y, const float* dy, float* dx,
                           i64 n) const {
    for (i64 i = 0; i < n; ++i)
      dx[i] += static_cast<float>(dy[i] * f_.derivative(x[i], y[i], params_.data()));
  }

  const PointwiseFunction& f_;
  std::vector<double> params_;
};

}  // namespace

static std::unique_ptr<OpRunner> make_pointwise_runner(const Graph& g, const Node& n) {
  const PointwiseFunction* f = pointwise_function(n.op.type);
  if (!f)
    throw LoweringError(
        fmt::format("{}: no kernel for {}", g.describe(n.id), to_string(n.op.type)));
  return std::make_unique<PointwiseRunner>(*f, operator_parameters(n.op));
}

// The point-wise operators without a backend kernel (those with one: elementwise_ops.cpp).
static bool runs_pointwise_on_host(OpType t) {
  return pointwise_function(t) != nullptr && !unary_kind(t);
}
UNITY_REGISTER_KERNEL_FAMILY(make_pointwise_runner, runs_pointwise_on_host)

}  // namespace unity::executor::detail
