// Compare, Logical, Where and Cast on the host: a task's operands are copied to host memory as
// doubles (float pieces as floats, integer and Bool pieces as the int64 the executor holds them
// in), computed by the core's kernels (unity/core/ops/mask_kernels.h, which the rule evaluator runs
// too) and copied back in the output's type. Broadcast operands arrive as the pieces the task
// requested (size 1 along a broadcast dim), so the local shapes broadcast as the whole ones do.
// Backward: Where routes dy to x where the condition holds and to y elsewhere, summed over the
// dims each is broadcast along; a float-to-float Cast passes dy through; the masks and integer
// casts have no gradient.
#include "kernel_registry.h"
#include "op_helpers.h"
#include "unity/core/ops/mask_kernels.h"

namespace unity::executor::detail {
namespace {

namespace mk = mask_kernels;

class MaskRunner final : public OpRunner {
 public:
  explicit MaskRunner(const Node& n) : f_(mk::mask_function(n.op)) {}

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (auto& t : tasks) {
      const HostOperands h = host_operands(be, t);
      std::vector<double> out(static_cast<std::size_t>(t.out[0]->elements()));
      mk::forward(f_, h.ptrs, h.sizes, t.out[0]->shape, out.data());
      upload_doubles(be, *t.out[0], out);
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (auto& t : tasks) {
      if (!t.out[0]->grad) continue;
      if (f_.type == OpType::Cast) {
        // Float to float: the identity (the kernels compute in float32 whatever the type).
        if (t.in[0]->grad) be.axpy(1.0f, t.out[0]->grad, t.in[0]->grad, t.out[0]->elements());
        continue;
      }
      if (f_.type != OpType::Where) continue;
      bool any = false;
      for (std::size_t s = 1; s < t.in.size(); ++s) any = any || t.in[s]->grad;
      if (!any) continue;
      const auto cond = host_ints(be, *t.in[0]);
      const auto dy = host_copy(be, t.out[0]->grad, t.out[0]->elements());
      std::vector<std::vector<std::int64_t>> sizes;
      for (const Slot* s : t.in) sizes.push_back(s->shape);
      // The condition takes no gradient.
      HostGradients grads(be, t, [](std::size_t s) { return s > 0; });
      mk::where_backward(f_, cond.data(), dy.data(), sizes, t.out[0]->shape, grads.ptrs);
      grads.upload(be, t);
    }
  }

 private:
  mk::MaskFunction f_;
};

}  // namespace

static std::unique_ptr<OpRunner> make_mask_runner(const Graph&, const Node& n) {
  return std::make_unique<MaskRunner>(n);
}

UNITY_REGISTER_KERNEL_FAMILY(make_mask_runner, is_mask_operator)

}  // namespace unity::executor::detail
