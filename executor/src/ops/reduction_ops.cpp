// Reduction on the host: the core's arithmetic (unity/core/ops/reduction.h) on each task's piece,
// staged through host memory as Resize is (resize_ops.cpp). A piece holds the kept dims of its
// output block and, over the reduced dims, the whole extent or (l1, sum_square) one block of it,
// whose result is a partial sum; either way the task reduces its local piece over the axes.
#include "kernel_registry.h"
#include "op_helpers.h"
#include "unity/core/ops/reduction.h"

namespace unity::executor::detail {
namespace {

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

class ReductionRunner final : public OpRunner {
 public:
  ReductionRunner(const Graph& g, const Node& n) : kind_(reduction_kind(n.op)) {
    const auto& x = g.shape(n.inputs.at(0));
    for (auto a : n.op.attrs.get_ints("axes")) axes_.push_back(x.axis(static_cast<int>(a)));
  }

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const Slot& x = *t.in[0];
      const Slot& y = *t.out[0];
      const auto xs = widen(host_copy(ctx.backend, x.value, x.elements()));
      std::vector<double> ys(static_cast<std::size_t>(y.elements()));
      reduction_forward(kind_, x.shape, axes_, xs.data(), ys.data());
      upload(ctx.backend, y.value, std::vector<float>(ys.begin(), ys.end()));
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const Slot& x = *t.in[0];
      const Slot& y = *t.out[0];
      if (!x.grad || !y.grad) continue;
      const auto xs = widen(host_copy(ctx.backend, x.value, x.elements()));
      const auto ys = widen(host_copy(ctx.backend, y.value, y.elements()));
      const auto dy = widen(host_copy(ctx.backend, y.grad, y.elements()));
      auto dx = widen(host_copy(ctx.backend, x.grad, x.elements()));
      reduction_backward(kind_, x.shape, axes_, xs.data(), ys.data(), dy.data(), dx.data());
      upload(ctx.backend, x.grad, std::vector<float>(dx.begin(), dx.end()));
    }
  }

 private:
  ReductionKind kind_;
  std::vector<int> axes_;
};

}  // namespace

static std::unique_ptr<OpRunner> make_reduction_runner(const Graph& g, const Node& n) {
  return std::make_unique<ReductionRunner>(g, n);
}

UNITY_REGISTER_KERNEL(make_reduction_runner, OpType::Reduction)

}  // namespace unity::executor::detail
