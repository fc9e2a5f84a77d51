// Experts on the host: each task's tokens, gates and its block of experts (and of the FFN width)
// are copied to host memory and run by the core's kernel (unity/core/ops/experts_kernels.h, which
// the rule evaluator runs too); the output is the task's partial sum. Every picked expert runs on
// its tokens one by one, which is what a CPU rank checking a plan needs, not a grouped GEMM.
#include "kernel_registry.h"
#include "op_helpers.h"
#include "unity/core/ops/experts_kernels.h"

namespace unity::executor::detail {
namespace {

namespace ek = experts_kernels;

class ExpertsRunner final : public OpRunner {
 public:
  explicit ExpertsRunner(const Node& n) : gated_(n.inputs.size() == 5) {}

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (auto& t : tasks) {
      const ek::ExpertsDims d = dims(t);
      const auto x = host_copy(be, t.in[0]->value, t.in[0]->elements());
      const auto g = host_copy(be, t.in[1]->value, t.in[1]->elements());
      const auto w1 = host_copy(be, t.in[2]->value, t.in[2]->elements());
      const auto w2 = host_copy(be, t.in[3]->value, t.in[3]->elements());
      std::vector<float> w3;
      if (gated_) w3 = host_copy(be, t.in[4]->value, t.in[4]->elements());
      std::vector<float> y(static_cast<std::size_t>(t.out[0]->elements()));
      ek::forward(d, x.data(), g.data(), w1.data(), w2.data(), gated_ ? w3.data() : nullptr,
                  y.data());
      upload(be, t.out[0]->value, y);
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (auto& t : tasks) {
      if (!t.out[0]->grad) continue;
      const ek::ExpertsDims d = dims(t);
      const auto dy = host_copy(be, t.out[0]->grad, t.out[0]->elements());
      std::vector<std::vector<float>> values, grads;
      for (const Slot* s : t.in) {
        values.push_back(host_copy(be, s->value, s->elements()));
        grads.push_back(s->grad ? host_copy(be, s->grad, s->elements()) : std::vector<float>{});
      }
      auto grad = [&](std::size_t i) { return grads[i].empty() ? nullptr : grads[i].data(); };
      ek::backward(d, values[0].data(), values[1].data(), values[2].data(), values[3].data(),
                   gated_ ? values[4].data() : nullptr, dy.data(), grad(0), grad(1), grad(2),
                   grad(3), gated_ ? grad(4) : nullptr);
      for (std::size_t i = 0; i < t.in.size(); ++i)
        if (t.in[i]->grad) upload(be, t.in[i]->grad, grads[i]);
    }
  }

 private:
  ek::ExpertsDims dims(const TaskBuffers& t) const {
    const auto& xs = t.in[0]->shape;
    const auto& w1 = t.in[2]->shape;
    ek::ExpertsDims d;
    d.hidden = xs.back();
    d.tokens = t.in[0]->elements() / d.hidden;
    d.experts = w1[0];
    d.ffn = w1[2];
    d.gated = gated_;
    return d;
  }

  bool gated_;
};

}  // namespace

static std::unique_ptr<OpRunner> make_experts_runner(const Graph&, const Node& n) {
  return std::make_unique<ExpertsRunner>(n);
}

UNITY_REGISTER_KERNEL(make_experts_runner, OpType::Experts)

}  // namespace unity::executor::detail
