// Resize on the host: the core's interpolation (unity/core/ops/resize.h) on each task's piece,
// staged through host memory as the point-wise kernels are (pointwise_ops.cpp): correct on a GPU,
// and slow there. A piece holds the resized axes whole (shape inference), so its local extents are
// the global ones there, and the dims split between tasks pass through.
#include "kernel_registry.h"
#include "op_helpers.h"
#include "unity/core/ops/resize.h"

namespace unity::executor::detail {
namespace {

class ResizeRunner final : public OpRunner {
 public:
  explicit ResizeRunner(ResizeSpec spec) : spec_(std::move(spec)) {}

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const Slot& x = *t.in[0];
      const Slot& y = *t.out[0];
      const std::vector<float> xs = host_copy(ctx.backend, x.value, x.elements());
      std::vector<float> ys(static_cast<std::size_t>(y.elements()));
      resize_forward(spec_, x.shape, y.shape, xs.data(), ys.data());
      ctx.backend.to_device(y.value, ys.data(), ys.size() * sizeof(float));
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const Slot& x = *t.in[0];
      const Slot& y = *t.out[0];
      if (!x.grad || !y.grad) continue;
      const std::vector<float> dy = host_copy(ctx.backend, y.grad, y.elements());
      std::vector<float> dx = host_copy(ctx.backend, x.grad, x.elements());
      resize_backward(spec_, x.shape, y.shape, dy.data(), dx.data());
      ctx.backend.to_device(x.grad, dx.data(), dx.size() * sizeof(float));
    }
  }

 private:
  ResizeSpec spec_;
};

}  // namespace

static std::unique_ptr<OpRunner> make_resize_runner(const Graph& g, const Node& n) {
  return std::make_unique<ResizeRunner>(resize_spec(n.op, g.shape(n.inputs.at(0)).rank()));
}

UNITY_REGISTER_KERNEL(make_resize_runner, OpType::Resize)

}  // namespace unity::executor::detail
