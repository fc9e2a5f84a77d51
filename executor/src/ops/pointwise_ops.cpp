// Point-wise operators that have no kernel of their own in the backends: the function and
// derivative of their core definition (unity/core/ops/operator_definition.h), evaluated on the
// host. On the CPU backend the staging copies are memcpys; on a GPU they cross PCIe, which is
// correct but slow, so an operator that models train on GPUs gets a backend kernel (UnaryKind).
#include <fmt/format.h>

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
      const std::size_t n = static_cast<std::size_t>(t.out[0]->elements());
      x_.resize(n);
      ctx.backend.to_host(x_.data(), t.in[0]->value, n * sizeof(float));
      for (float& v : x_) v = static_cast<float>(f_.value(v, params_.data()));
      ctx.backend.to_device(t.out[0]->value, x_.data(), n * sizeof(float));
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      if (!t.in[0]->grad || !t.out[0]->grad) continue;
      const std::size_t n = static_cast<std::size_t>(t.out[0]->elements());
      x_.resize(n);
      y_.resize(n);
      dy_.resize(n);
      ctx.backend.to_host(x_.data(), t.in[0]->value, n * sizeof(float));
      ctx.backend.to_host(y_.data(), t.out[0]->value, n * sizeof(float));
      ctx.backend.to_host(dy_.data(), t.out[0]->grad, n * sizeof(float));
      for (std::size_t i = 0; i < n; ++i)
        dy_[i] = static_cast<float>(dy_[i] * f_.derivative(x_[i], y_[i], params_.data()));
      // Gradients accumulate: dx += dy f'(x).
      ctx.backend.to_host(x_.data(), t.in[0]->grad, n * sizeof(float));
      for (std::size_t i = 0; i < n; ++i) x_[i] += dy_[i];
      ctx.backend.to_device(t.in[0]->grad, x_.data(), n * sizeof(float));
    }
  }

 private:
  const PointwiseFunction& f_;
  std::vector<double> params_;
  std::vector<float> x_, y_, dy_;  // host staging
};

}  // namespace

std::unique_ptr<OpRunner> make_pointwise_runner(const Graph& g, const Node& n) {
  const PointwiseFunction* f = pointwise_function(n.op.type);
  if (!f)
    throw LoweringError(
        fmt::format("{}: no kernel for {}", g.describe(n.id), to_string(n.op.type)));
  return std::make_unique<PointwiseRunner>(*f, pointwise_parameters(n.op));
}

}  // namespace unity::executor::detail
