// Linear, MatMul and BatchMatMul: GEMMs on the task's pieces. A task of a split reduction produces
// a partial sum; only the task holding the first reduction block adds the bias, so the Reduce that
// follows adds it once.
#include "kernel_registry.h"
#include "op_helpers.h"

namespace unity::executor::detail {
namespace {

class LinearRunner final : public OpRunner {
 public:
  explicit LinearRunner(const Node& n) : act_(n.op), has_bias_(n.inputs.size() == 3) {}

  void prepare(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const i64 n = t.out[0]->elements();
      t.scratch.push_back(act_.none() ? nullptr : ctx.memory.allocate_floats(n));         // dz
      t.scratch.push_back(act_.needs_input() ? ctx.memory.allocate_floats(n) : nullptr);  // z
    }
  }

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    auto& be = ctx.backend;
    for (auto& t : tasks) {
      const Slot& x = *t.in[0];
      const Slot& w = *t.in[1];
      Slot& y = *t.out[0];
      const i64 in = w.shape[0], out = w.shape[1], rows = x.elements() / in;
      be.gemm(false, false, rows, out, in, 1.0f, x.f(), in, w.f(), out, 0.0f, y.f(), out);
      if (has_bias_ && t.task->index % ctx.node.outputs[0].replica == 0)
        be.add_bias(y.f(), t.in[2]->f(), rows, out, 1);
      act_.forward(be, y.f(), static_cast<float*>(t.scratch[1]), y.elements());
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    auto& be = ctx.backend;
    for (auto& t : tasks) {
      Slot& x = *t.in[0];
      Slot& w = *t.in[1];
      Slot& y = *t.out[0];
      if (!y.grad) continue;
      const i64 in = w.shape[0], out = w.shape[1], rows = x.elements() / in;
      const float* dz = act_.backward(be, y.f(), static_cast<float*>(t.scratch[1]), y.grad,
                                      static_cast<float*>(t.scratch[0]), y.elements());
      if (x.grad) be.gemm(false, true, rows, in, out, 1.0f, dz, out, w.f(), out, 1.0f, x.grad, in);
      if (w.grad) be.gemm(true, false, in, out, rows, 1.0f, x.f(), in, dz, out, 1.0f, w.grad, out);
      if (has_bias_ && t.in[2]->grad && t.task->index % ctx.node.outputs[0].replica == 0)
        be.bias_grad(dz, t.in[2]->grad, rows, out, 1);
    }
  }

 private:
  FusedActivation act_;
  bool has_bias_;
};

// a [..., m, k] x b [k, n] (shared) or [..., k, n] (batched).
class MatMulRunner final : public OpRunner {
 public:
  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) run(ctx, t, false);
  }
  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) run(ctx, t, true);
  }

 private:
  static void run(StepContext& ctx, TaskBuffers& t, bool grad) {
    auto& be = ctx.backend;
    const Slot& a = *t.in[0];
    const Slot& b = *t.in[1];
    const Slot& y = *t.out[0];
    const int ra = static_cast<int>(a.shape.size()), rb = static_cast<int>(b.shape.size());
    const i64 m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
    const bool shared = rb == 2 && ra > 2;
    if (shared) {
      const i64 rows = a.elements() / k;
      if (!grad) {
        be.gemm(false, false, rows, n, k, 1.0f, a.f(), k, b.f(), n, 0.0f, y.f(), n);
        return;
      }
      if (!y.grad) return;
      if (a.grad) be.gemm(false, true, rows, k, n, 1.0f, y.grad, n, b.f(), n, 1.0f, a.grad, k);
      if (b.grad) be.gemm(true, false, k, n, rows, 1.0f, a.f(), k, y.grad, n, 1.0f, b.grad, n);
      return;
    }
    const i64 batch = product(a.shape, 0, ra - 2);
    if (!grad) {
      be.gemm(false, false, m, n, k, 1.0f, a.f(), k, b.f(), n, 0.0f, y.f(), n, batch, m * k, k * n,
              m * n);
      return;
    }
    if (!y.grad) return;
    if (a.grad)
      be.gemm(false, true, m, k, n, 1.0f, y.grad, n, b.f(), n, 1.0f, a.grad, k, batch, m * n, k * n,
              m * k);
    if (b.grad)
      be.gemm(true, false, k, n, m, 1.0f, a.f(), k, y.grad, n, 1.0f, b.grad, n, batch, m * k, m * n,
              k * n);
  }
};

}  // namespace

static std::unique_ptr<OpRunner> make_dense_runner(const Graph&, const Node& n) {
  if (n.op.type == OpType::Linear) return std::make_unique<LinearRunner>(n);
  return std::make_unique<MatMulRunner>();
}

UNITY_REGISTER_KERNEL(make_dense_runner, OpType::Linear, OpType::MatMul, OpType::BatchMatMul)

}  // namespace unity::executor::detail
