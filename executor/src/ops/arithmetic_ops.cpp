// Arithmetic (max, min, sum, mean, prelu, mod, fmod, pow of broadcast operands) on the host: a
// task's operands are copied to host memory as doubles (float pieces as floats, integer pieces as
// the int64 the executor holds them in), computed by the core's kernels
// (unity/core/ops/arithmetic.h, which the rule evaluator runs too) and the output copied back in
// its type. Broadcast operands arrive as the pieces the task requested (size 1 along a broadcast
// dim), so the local shapes broadcast as the whole ones do. Backward: each float operand's
// derivative times dy, summed over the dims it is broadcast along; integer outputs have none.
#include "kernel_registry.h"
#include "op_helpers.h"
#include "unity/core/ops/arithmetic.h"

namespace unity::executor::detail {
namespace {

namespace ar = arithmetic;

class ArithmeticRunner final : public OpRunner {
 public:
  explicit ArithmeticRunner(const Node& n) : a_(ar::arithmetic_of(n.op)) {}

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (auto& t : tasks) {
      const HostOperands h = host_operands(be, t);
      const Slot& out = *t.out[0];
      std::vector<double> y(static_cast<std::size_t>(out.elements()));
      ar::forward(a_, h.ptrs, h.sizes, out.shape, out.elem_size == 8, y.data());
      upload_doubles(be, out, y);
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (auto& t : tasks) {
      if (!t.out[0]->grad || t.out[0]->elem_size == 8) continue;
      bool any = false;
      for (const Slot* s : t.in) any = any || (s->grad && s->elem_size != 8);
      if (!any) continue;
      const HostOperands h = host_operands(be, t);
      const auto dy = host_copy(be, t.out[0]->grad, t.out[0]->elements());
      HostGradients grads(be, t, [&](std::size_t s) { return t.in[s]->elem_size != 8; });
      ar::backward(a_, h.ptrs, h.sizes, t.out[0]->shape, dy.data(), grads.ptrs);
      grads.upload(be, t);
    }
  }

 private:
  ar::Arithmetic a_;
};

}  // namespace

static std::unique_ptr<OpRunner> make_arithmetic_runner(const Graph&, const Node& n) {
  return std::make_unique<ArithmeticRunner>(n);
}

UNITY_REGISTER_KERNEL(make_arithmetic_runner, OpType::Arithmetic)

}  // namespace unity::executor::detail
