// LatentAttention on the host: each task's samples, its copies of the down projections and norms
// and its heads' columns of the up projections and rows of w_o are copied to host memory and run
// by the core's kernel (unity/core/ops/latent_attention.h, which the rule evaluator runs too) with
// OpenBLAS's products; the output is the task's partial sum over its heads. The forward pass's
// results are kept for the backward pass, as a fused kernel keeps what it needs, instead of
// running it twice. What a CPU rank checking a plan needs; the CUDA backend runs it the same way,
// through host copies.
#include <cblas.h>

#include "kernel_registry.h"
#include "op_helpers.h"
#include "unity/core/ops/latent_attention.h"

namespace unity::executor::detail {
namespace {

namespace la = latent_attention;

void blas_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
               const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta,
               float* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), 1.0f, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

class LatentAttentionRunner final : public OpRunner {
 public:
  explicit LatentAttentionRunner(const Node& n) : op_(n.op), inputs_(n.inputs.size()) {}

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    kept_.resize(tasks.size());
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      auto& t = tasks[i];
      std::vector<std::vector<float>> values;
      for (const Slot* s : t.in) values.push_back(host_copy(be, s->value, s->elements()));
      std::vector<float> y(static_cast<std::size_t>(t.out[0]->elements()));
      la::forward(dims(t), pointers(values), y.data(), blas_gemm,
                  ctx.training ? &kept_[i] : nullptr);
      upload(be, t.out[0]->value, y);
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (std::size_t k = 0; k < tasks.size(); ++k) {
      auto& t = tasks[k];
      la::Kept<float> kept;
      if (k < kept_.size()) std::swap(kept, kept_[k]);  // released once used
      if (!t.out[0]->grad) continue;
      const auto dy = host_copy(be, t.out[0]->grad, t.out[0]->elements());
      std::vector<std::vector<float>> values, grads;
      for (const Slot* s : t.in) {
        values.push_back(host_copy(be, s->value, s->elements()));
        grads.push_back(s->grad ? host_copy(be, s->grad, s->elements()) : std::vector<float>{});
      }
      la::Gradients<float> g;
      for (int s = 0; s < la::kSlots; ++s) {
        const int i = la::input_of(s, inputs_);
        if (i >= 0 && !grads[static_cast<std::size_t>(i)].empty())
          g.at[s] = grads[static_cast<std::size_t>(i)].data();
      }
      la::backward(dims(t), pointers(values), dy.data(), g, blas_gemm, &kept);
      for (std::size_t i = 0; i < t.in.size(); ++i)
        if (t.in[i]->grad) upload(be, t.in[i]->grad, grads[i]);
    }
  }

 private:
  la::Dims dims(const TaskBuffers& t) const {
    auto local = [&](int s) {
      return t.in[static_cast<std::size_t>(la::input_of(s, inputs_))]->shape;
    };
    return la::make_dims(op_, inputs_, local(la::kX), local(la::kWuq), local(la::kWdkv));
  }

  la::Inputs<float> pointers(const std::vector<std::vector<float>>& values) const {
    la::Inputs<float> in;
    for (int s = 0; s < la::kSlots; ++s) {
      const int i = la::input_of(s, inputs_);
      if (i >= 0) in.at[s] = values[static_cast<std::size_t>(i)].data();
    }
    return in;
  }

  Operator op_;
  std::size_t inputs_;
  std::vector<la::Kept<float>> kept_;  // each task's last forward pass
};

}  // namespace

static std::unique_ptr<OpRunner> make_latent_attention_runner(const Graph&, const Node& n) {
  return std::make_unique<LatentAttentionRunner>(n);
}

UNITY_REGISTER_KERNEL(make_latent_attention_runner, OpType::LatentAttention)

}  // namespace unity::executor::detail
