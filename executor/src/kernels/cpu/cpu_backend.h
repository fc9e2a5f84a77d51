#pragma once
// The CPU backend: host memory, OpenBLAS GEMMs, and plain C++ loops for everything else (compiled
// at -O3 so they vectorise). One rank is one core: OpenBLAS runs `threads` threads (1 by default).
#include "unity/executor/device_backend.h"

namespace unity::executor::cpu {

class CpuBackend final : public DeviceBackend {
 public:
  explicit CpuBackend(int threads);
  std::string name() const override { return "cpu"; }

  void* allocate(std::size_t bytes) override;
  bool host_memory() const override { return true; }
  void release(void* p) override;
  void fill_zero(void* p, std::size_t bytes) override;
  void fill(float* p, float value, i64 n) override;
  void to_device(void* dst, const void* host, std::size_t bytes) override;
  void to_host(void* host, const void* src, std::size_t bytes) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void copy_box(const BoxCopy& c) override;
  void synchronize() override {}

  void axpy(float alpha, const float* x, float* y, i64 n) override;
  void scale(float alpha, float* y, i64 n) override;
  double sum(const float* x, i64 n) override;

  void gemm(bool trans_a, bool trans_b, i64 m, i64 n, i64 k, float alpha, const float* a, i64 lda,
            const float* b, i64 ldb, float beta, float* c, i64 ldc, i64 batch, i64 stride_a,
            i64 stride_b, i64 stride_c) override;
  void add_bias(float* y, const float* bias, i64 outer, i64 channels, i64 inner) override;
  void bias_grad(const float* dy, float* db, i64 outer, i64 channels, i64 inner) override;

  void unary(UnaryKind k, float scalar, const float* x, float* y, i64 n) override;
  void unary_backward(UnaryKind k, float scalar, const float* x, const float* y, const float* dy,
                      float* dx, i64 n) override;
  void binary(BinaryKind k, const BroadcastShape& s, const float* a, const float* b,
              float* y) override;
  void binary_backward(BinaryKind k, const BroadcastShape& s, const float* a, const float* b,
                       const float* dy, float* da, float* db) override;
  void dropout(const DropoutSpec& s, const float* x, float* y) override;
  void dropout_backward(const DropoutSpec& s, const float* dy, float* dx) override;

  void softmax(const float* x, float* y, i64 outer, i64 axis, i64 inner) override;
  void softmax_backward(const float* y, const float* dy, float* dx, i64 outer, i64 axis,
                        i64 inner) override;
  void reduce_sum(const float* x, float* y, const std::vector<i64>& in_shape,
                  const std::vector<i64>& out_shape, float scale) override;
  void reduce_sum_backward(const float* dy, float* dx, const std::vector<i64>& in_shape,
                           const std::vector<i64>& out_shape, float scale) override;
  void transpose(const void* x, void* y, const std::vector<i64>& x_shape,
                 const std::vector<i64>& perm, int elem_size, bool add) override;

  void conv2d(const ConvSpec& s, const float* x, const float* w, float* y) override;
  void conv2d_backward_data(const ConvSpec& s, const float* dy, const float* w, float* dx) override;
  void conv2d_backward_filter(const ConvSpec& s, const float* x, const float* dy,
                              float* dw) override;
  void pool2d(const PoolSpec& s, const float* x, float* y, std::int32_t* argmax) override;
  void pool2d_backward(const PoolSpec& s, const float* dy, const std::int32_t* argmax,
                       float* dx) override;

  void channel_sums(const float* x, float* sum, i64 outer, i64 channels, i64 inner) override;
  void channel_squared_deviations(const float* x, const float* mean, float* out, i64 outer,
                                  i64 channels, i64 inner) override;
  void inverse_std(const float* squared_deviations, double count, float epsilon, float* invstd,
                   i64 channels) override;
  void channel_normalize(const float* x, const float* mean, const float* invstd, const float* scale,
                         const float* shift, float* y, i64 outer, i64 channels, i64 inner) override;
  void channel_backward_moments(const float* x, const float* dy, const float* mean,
                                const float* invstd, float* sum_dy, float* sum_dy_xhat, i64 outer,
                                i64 channels, i64 inner) override;
  void channel_normalize_backward(const float* x, const float* dy, const float* mean,
                                  const float* invstd, const float* scale, const float* sum_dy,
                                  const float* sum_dy_xhat, double count, float* dx, i64 outer,
                                  i64 channels, i64 inner) override;
  void layer_norm(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                  float* rstd, i64 rows, i64 cols, float epsilon, bool rms) override;
  void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                           const float* dy, float* dx, float* dgamma, float* dbeta, i64 rows,
                           i64 cols, bool rms) override;

  bool embedding(const std::int64_t* indices, i64 count, i64 bag, bool mean, const float* table,
                 i64 row_begin, i64 rows, i64 cols, i64 num_entries, float* y) override;
  void embedding_backward(const std::int64_t* indices, i64 count, i64 bag, bool mean,
                          const float* dy, i64 row_begin, i64 rows, i64 cols,
                          float* dtable) override;
  bool softmax_cross_entropy(const float* logits, const std::int64_t* labels, float* loss, i64 rows,
                             i64 classes) override;
  void softmax_cross_entropy_backward(const float* logits, const std::int64_t* labels,
                                      const float* dloss, float* dlogits, i64 rows,
                                      i64 classes) override;
  void mse(const float* p, const float* t, float* loss, i64 rows, i64 cols) override;
  void mse_backward(const float* p, const float* t, const float* dloss, float* dp, float* dt,
                    i64 rows, i64 cols) override;

  void sgd(float* w, const float* g, float lr, i64 n) override;
  void sgd_momentum(float* w, const float* g, float* v, float lr, float momentum, i64 n) override;
  void adam(float* w, const float* g, float* m, float* v, float lr, float beta1, float beta2,
            float epsilon, float correction1, float correction2, i64 n) override;

 private:
  std::vector<float> workspace_;  // im2col columns; a loss row's exps
  float* workspace(i64 elements);
};

// A box copy in host memory (what CpuBackend::copy_box does), for code that has no backend.
void copy_box_host(const BoxCopy& c);
// Row-major strides of a shape.
std::vector<i64> strides_of(const std::vector<i64>& shape);
// The dropout hash (shared with tests): keep element `global_index` of a tensor under `seed`?
bool dropout_keeps(std::uint64_t seed, i64 global_index, double rate);

}  // namespace unity::executor::cpu
