// Arithmetic (max, min, sum, mean, prelu, mod, fmod, pow of broadcast operands) on the host: a
// task's operands are copied to host memory as doubles (float pieces as floats, integer pieces as
// the int64 the executor holds them in), computed by the core's kernels
// (unity/core/ops/arithmetic.h, which the rule evaluator runs too) and the output copied back in
// its type. Broadcast operands arrive as the pieces the task requested (size 1 along a broadcast
// dim), so the local shapes broadcast as the whole ones do. Backward: each float operand's
// derivative times dy, summed over the dims it is broadcast along; integer outputs have none.
#include "op_helpers.h"
#include "unity/core/ops/arithmetic.h"

namespace unity::executor::detail {
namespace {

namespace ar = arithmetic;

std::vector<double> fetch(DeviceBackend& be, const Slot& s) {
  if (s.elem_size == 8) {
    const auto v = host_ints(be, s);
    return {v.begin(), v.end()};
  }
  const auto v = host_copy(be, s.value, s.elements());
  return {v.begin(), v.end()};
}

struct HostOperands {
  std::vector<std::vector<double>> values;
  std::vector<const double*> ptrs;
  std::vector<std::vector<std::int64_t>> sizes;
};

HostOperands fetch_all(DeviceBackend& be, const TaskBuffers& t) {
  HostOperands h;
  for (const Slot* s : t.in) {
    h.values.push_back(fetch(be, *s));
    h.sizes.push_back(s->shape);
  }
  for (const auto& v : h.values) h.ptrs.push_back(v.data());
  return h;
}

class ArithmeticRunner final : public OpRunner {
 public:
  explicit ArithmeticRunner(const Node& n) : a_(ar::arithmetic_of(n.op)) {}

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (auto& t : tasks) {
      const HostOperands h = fetch_all(be, t);
      Slot& out = *t.out[0];
      const bool integer = out.elem_size == 8;
      std::vector<double> y(static_cast<std::size_t>(out.elements()));
      ar::forward(a_, h.ptrs, h.sizes, out.shape, integer, y.data());
      if (integer)
        upload(be, out.value, std::vector<std::int64_t>(y.begin(), y.end()));
      else
        upload(be, out.value, std::vector<float>(y.begin(), y.end()));
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (auto& t : tasks) {
      if (!t.out[0]->grad || t.out[0]->elem_size == 8) continue;
      bool any = false;
      for (const Slot* s : t.in) any = any || (s->grad && s->elem_size != 8);
      if (!any) continue;
      const HostOperands h = fetch_all(be, t);
      const auto dy = host_copy(be, t.out[0]->grad, t.out[0]->elements());
      std::vector<std::vector<float>> grads(t.in.size());
      std::vector<float*> ptrs(t.in.size(), nullptr);
      for (std::size_t s = 0; s < t.in.size(); ++s) {
        if (!t.in[s]->grad || t.in[s]->elem_size == 8) continue;
        grads[s] = host_copy(be, t.in[s]->grad, t.in[s]->elements());
        ptrs[s] = grads[s].data();
      }
      ar::backward(a_, h.ptrs, h.sizes, t.out[0]->shape, dy.data(), ptrs);
      for (std::size_t s = 0; s < t.in.size(); ++s)
        if (ptrs[s]) upload(be, t.in[s]->grad, grads[s]);
    }
  }

 private:
  ar::Arithmetic a_;
};

}  // namespace

std::unique_ptr<OpRunner> make_arithmetic_runner(const Graph&, const Node& n) {
  return std::make_unique<ArithmeticRunner>(n);
}

}  // namespace unity::executor::detail
