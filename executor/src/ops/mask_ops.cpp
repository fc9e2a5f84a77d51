// Compare, Logical, Where and Cast on the host: a task's operands are copied to host memory as
// doubles (float pieces as floats, integer and Bool pieces as the int64 the executor holds them
// in), computed by the core's kernels (unity/core/ops/mask_kernels.h, which the rule evaluator runs
// too) and copied back in the output's type. Broadcast operands arrive as the pieces the task
// requested (size 1 along a broadcast dim), so the local shapes broadcast as the whole ones do.
// Backward: Where routes dy to x where the condition holds and to y elsewhere, summed over the
// dims each is broadcast along; a float-to-float Cast passes dy through; the masks and integer
// casts have no gradient.
#include "op_helpers.h"
#include "unity/core/ops/mask_kernels.h"

namespace unity::executor::detail {
namespace {

namespace mk = mask_kernels;

std::vector<double> fetch(DeviceBackend& be, const Slot& s) {
  if (s.elem_size == 8) {
    const auto v = host_ints(be, s);
    return {v.begin(), v.end()};
  }
  const auto v = host_copy(be, s.value, s.elements());
  return {v.begin(), v.end()};
}

void store(DeviceBackend& be, Slot& s, const std::vector<double>& v) {
  if (s.elem_size == 8) {
    upload(be, s.value, std::vector<std::int64_t>(v.begin(), v.end()));
    return;
  }
  upload(be, s.value, std::vector<float>(v.begin(), v.end()));
}

class MaskRunner final : public OpRunner {
 public:
  explicit MaskRunner(const Node& n) : f_(mk::mask_function(n.op)) {}

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (auto& t : tasks) {
      std::vector<std::vector<double>> in;
      std::vector<const double*> ptrs;
      std::vector<std::vector<std::int64_t>> sizes;
      for (const Slot* s : t.in) {
        in.push_back(fetch(be, *s));
        sizes.push_back(s->shape);
      }
      for (const auto& v : in) ptrs.push_back(v.data());
      std::vector<double> out(static_cast<std::size_t>(t.out[0]->elements()));
      mk::forward(f_, ptrs, sizes, t.out[0]->shape, out.data());
      store(be, *t.out[0], out);
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
      std::vector<std::vector<float>> grads(t.in.size());
      std::vector<float*> ptrs(t.in.size(), nullptr);
      std::vector<std::vector<std::int64_t>> sizes;
      for (std::size_t s = 0; s < t.in.size(); ++s) {
        sizes.push_back(t.in[s]->shape);
        if (s == 0 || !t.in[s]->grad) continue;
        grads[s] = host_copy(be, t.in[s]->grad, t.in[s]->elements());
        ptrs[s] = grads[s].data();
      }
      mk::where_backward(f_, cond.data(), dy.data(), sizes, t.out[0]->shape, ptrs);
      for (std::size_t s = 1; s < t.in.size(); ++s)
        if (ptrs[s]) upload(be, t.in[s]->grad, grads[s]);
    }
  }

 private:
  mk::MaskFunction f_;
};

}  // namespace

std::unique_ptr<OpRunner> make_mask_runner(const Graph&, const Node& n) {
  return std::make_unique<MaskRunner>(n);
}

}  // namespace unity::executor::detail
