// Det on the host: each task's piece holds whole matrices (its slice layout reads the last two
// dims whole), so it takes the determinant of each, and the backward adds dy times each matrix's
// cofactors (unity/core/ops/determinant.h) to dx. Staged through host memory as Reduction is.
#include "kernel_registry.h"
#include "op_helpers.h"
#include "unity/core/ops/determinant.h"

namespace unity::executor::detail {
namespace {

std::vector<double> host_doubles_of(DeviceBackend& be, const void* p, i64 n) {
  const std::vector<float> v = host_copy(be, p, n);
  return {v.begin(), v.end()};
}

class DetRunner final : public OpRunner {
 public:
  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const Slot& x = *t.in[0];
      const Slot& y = *t.out[0];
      const i64 m = x.shape.back();
      const auto xs = host_doubles_of(ctx.backend, x.value, x.elements());
      std::vector<float> ys(static_cast<std::size_t>(y.elements()));
      for (std::size_t k = 0; k < ys.size(); ++k)
        ys[k] = static_cast<float>(
            determinant::det(xs.data() + k * static_cast<std::size_t>(m * m), m));
      upload(ctx.backend, y.value, ys);
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const Slot& x = *t.in[0];
      const Slot& y = *t.out[0];
      if (!x.grad || !y.grad) continue;
      const i64 m = x.shape.back();
      const auto mm = static_cast<std::size_t>(m * m);
      const auto xs = host_doubles_of(ctx.backend, x.value, x.elements());
      const auto dy = host_doubles_of(ctx.backend, y.grad, y.elements());
      std::vector<float> dx = host_copy(ctx.backend, x.grad, x.elements());
      for (std::size_t k = 0; k < dy.size(); ++k) {
        const std::vector<double> c = determinant::cofactors(xs.data() + k * mm, m);
        for (std::size_t e = 0; e < mm; ++e) dx[k * mm + e] += static_cast<float>(dy[k] * c[e]);
      }
      upload(ctx.backend, x.grad, dx);
    }
  }
};

}  // namespace

static std::unique_ptr<OpRunner> make_det_runner(const Graph&, const Node&) {
  return std::make_unique<DetRunner>();
}

UNITY_REGISTER_KERNEL(make_det_runner, OpType::Det)

}  // namespace unity::executor::detail
