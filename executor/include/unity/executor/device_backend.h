#pragma once
// The device side of the executor: memory and kernels. The runtime (lowering, scheduling, data
// movement, training loop) is written once against this interface; the CPU backend implements it
// with host memory and OpenBLAS, the CUDA backend with device memory, cuBLAS, cuDNN and our
// kernels. Buffers are row-major. Kernels that produce gradients of inputs ACCUMULATE into them (dx
// += ...), so that an input read by several tasks, or by several requests of one task, sums its
// gradients.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace unity::executor {

using i64 = std::int64_t;

enum class UnaryKind {
  Identity,
  Relu,
  Gelu,
  Sigmoid,
  Tanh,
  Exp,
  Sqrt,
  Erf,
  ScalarAdd,
  ScalarMul,
  Pow
};
enum class BinaryKind { Add, Sub, Mul, Div };

// A box copy between two row-major buffers of up to 8 dims (element size 4 or 8 bytes). With `add`
// (float only) the box is added into the destination instead of copied.
struct BoxCopy {
  const void* src = nullptr;
  void* dst = nullptr;
  int elem_size = 4;
  bool add = false;
  std::vector<i64> src_shape, src_offset;
  std::vector<i64> dst_shape, dst_offset;
  std::vector<i64> extent;
};

// Numpy broadcasting on local shapes, already aligned to the output's rank (missing dims are 1).
struct BroadcastShape {
  std::vector<i64> out, a, b;
};

// A convolution over 1 to 3 spatial dims as a 3-D one: depth (d) and height (h) are 1 for a 1-D
// convolution (its length is the width), depth is 1 for a 2-D one. Backends without 3-D kernels
// refuse a spec with depth > 1 (`is_3d`).
struct ConvSpec {
  i64 n = 1, c = 1, d = 1, h = 1, w = 1;  // input (local)
  i64 o = 1, groups = 1;                  // output channels (local) and groups (local)
  i64 kd = 1, kh = 1, kw = 1, sd = 1, sh = 1, sw = 1, dd = 1, dh = 1, dw = 1;
  i64 pad_front = 0, pad_back = 0, pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  i64 od = 1, oh = 1, ow = 1;  // output (local)
  bool is_3d() const { return d != 1 || kd != 1 || od != 1; }
};

struct PoolSpec {
  bool max = true;
  i64 n = 1, c = 1, d = 1, h = 1, w = 1;
  i64 kd = 1, kh = 1, kw = 1, sd = 1, sh = 1, sw = 1;
  i64 pad_front = 0, pad_back = 0, pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  i64 od = 1, oh = 1, ow = 1;
  // Window taps `dd`, `dh`, `dw` apart (ONNX's dilations).
  i64 dd = 1, dh = 1, dw = 1;
  // Average pooling divides by the number of input elements inside the window (ONNX's default,
  // count_include_pad = 0), or with count_include_pad by the whole window kd * kh * kw (the
  // operator's padding never leaves a window partly outside it); padding only ever lies outside
  // the whole tensor, never at a piece edge.
  bool count_include_pad = false;
  bool is_3d() const { return d != 1 || kd != 1 || od != 1; }
  bool dilated() const { return dd != 1 || dh != 1 || dw != 1; }
};

// Dropout keeps an element with probability 1 - rate, decided by a hash of (seed, global element
// index), so every piece, copy and the one-rank reference drop the same elements.
struct DropoutSpec {
  double rate = 0;
  std::uint64_t seed = 0;
  std::vector<i64> global_shape;  // the whole tensor
  std::vector<i64> origin;        // where the local buffer starts in it
  std::vector<i64> local_shape;
};

// Calls f(local_index, global_index) for each element of the local box of `s` (row-major): the
// numbering Dropout's mask and the Random operator's numbers are drawn by.
template <typename F>
void for_global(const DropoutSpec& s, F f) {
  const int rank = static_cast<int>(s.local_shape.size());
  std::vector<i64> gs(static_cast<std::size_t>(rank), 1);
  for (int d = rank - 2; d >= 0; --d) gs[d] = gs[d + 1] * s.global_shape[d + 1];
  i64 total = 1;
  for (auto e : s.local_shape) total *= e;
  std::vector<i64> idx(static_cast<std::size_t>(rank), 0);
  i64 g = 0;
  for (int d = 0; d < rank; ++d) g += s.origin[d] * gs[d];
  for (i64 i = 0; i < total; ++i) {
    f(i, g);
    for (int d = rank - 1; d >= 0; --d) {
      ++idx[d];
      g += gs[d];
      if (idx[d] < s.local_shape[d]) break;
      g -= gs[d] * idx[d];
      idx[d] = 0;
    }
  }
}

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual std::string name() const = 0;

  // Memory. allocate() returns zero-filled memory (never null for bytes > 0; throws when out of
  // memory).
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p) = 0;
  // Whether its buffers are host memory, which the kernels that run on the host may read and write
  // in place instead of staging copies.
  virtual bool host_memory() const { return false; }
  virtual void fill_zero(void* p, std::size_t bytes) = 0;
  virtual void fill(float* p, float value, i64 n) = 0;
  virtual void to_device(void* dst, const void* host, std::size_t bytes) = 0;
  virtual void to_host(void* host, const void* src, std::size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_box(const BoxCopy& c) = 0;
  virtual void synchronize() = 0;

  // y += alpha * x; y *= alpha; sum of x (in double, returned to the host).
  virtual void axpy(float alpha, const float* x, float* y, i64 n) = 0;
  virtual void scale(float alpha, float* y, i64 n) = 0;
  virtual double sum(const float* x, i64 n) = 0;

  // C = alpha * op(A) * op(B) + beta * C, row-major, `batch` times with the given element strides.
  virtual void gemm(bool trans_a, bool trans_b, i64 m, i64 n, i64 k, float alpha, const float* a,
                    i64 lda, const float* b, i64 ldb, float beta, float* c, i64 ldc, i64 batch = 1,
                    i64 stride_a = 0, i64 stride_b = 0, i64 stride_c = 0) = 0;
  // y[o, c, i] += bias[c] for a [outer, channels, inner] tensor; and its gradient db[c] += sum dy.
  virtual void add_bias(float* y, const float* bias, i64 outer, i64 channels, i64 inner) = 0;
  virtual void bias_grad(const float* dy, float* db, i64 outer, i64 channels, i64 inner) = 0;

  virtual void unary(UnaryKind k, float scalar, const float* x, float* y, i64 n) = 0;
  // dx += dy * f'(x); `y` = f(x) (used by kinds whose derivative is cheaper from the output).
  virtual void unary_backward(UnaryKind k, float scalar, const float* x, const float* y,
                              const float* dy, float* dx, i64 n) = 0;
  virtual void binary(BinaryKind k, const BroadcastShape& s, const float* a, const float* b,
                      float* y) = 0;
  // da, db may be null (no gradient wanted); broadcast dims are summed.
  virtual void binary_backward(BinaryKind k, const BroadcastShape& s, const float* a,
                               const float* b, const float* dy, float* da, float* db) = 0;
  virtual void dropout(const DropoutSpec& s, const float* x, float* y) = 0;
  virtual void dropout_backward(const DropoutSpec& s, const float* dy, float* dx) = 0;

  // Softmax over the middle dim of [outer, axis, inner].
  virtual void softmax(const float* x, float* y, i64 outer, i64 axis, i64 inner) = 0;
  virtual void softmax_backward(const float* y, const float* dy, float* dx, i64 outer, i64 axis,
                                i64 inner) = 0;
  // y = scale * sum over the dims where out_shape is 1 and in_shape is not (same rank).
  virtual void reduce_sum(const float* x, float* y, const std::vector<i64>& in_shape,
                          const std::vector<i64>& out_shape, float scale) = 0;
  virtual void reduce_sum_backward(const float* dy, float* dx, const std::vector<i64>& in_shape,
                                   const std::vector<i64>& out_shape, float scale) = 0;
  // y = x permuted (y dim d = x dim perm[d]); with `add`, y += permuted x. Element size 4 or 8.
  virtual void transpose(const void* x, void* y, const std::vector<i64>& x_shape,
                         const std::vector<i64>& perm, int elem_size, bool add) = 0;

  virtual void conv2d(const ConvSpec& s, const float* x, const float* w, float* y) = 0;
  virtual void conv2d_backward_data(const ConvSpec& s, const float* dy, const float* w,
                                    float* dx) = 0;
  virtual void conv2d_backward_filter(const ConvSpec& s, const float* x, const float* dy,
                                      float* dw) = 0;
  // `argmax` (max pooling only): one int32 per output, the window position of the maximum.
  virtual void pool2d(const PoolSpec& s, const float* x, float* y, std::int32_t* argmax) = 0;
  virtual void pool2d_backward(const PoolSpec& s, const float* dy, const std::int32_t* argmax,
                               float* dx) = 0;

  // Batch statistics of [outer, channels, inner] in two passes (the one-pass E[x^2] - E[x]^2 loses
  // everything to cancellation when a channel barely varies): per-channel sums, then the squared
  // deviations from the (global) mean; both overwrite their output.
  virtual void channel_sums(const float* x, float* sum, i64 outer, i64 channels, i64 inner) = 0;
  virtual void channel_squared_deviations(const float* x, const float* mean, float* out, i64 outer,
                                          i64 channels, i64 inner) = 0;
  // invstd = 1 / sqrt(squared_deviations / count + epsilon), per channel.
  virtual void inverse_std(const float* squared_deviations, double count, float epsilon,
                           float* invstd, i64 channels) = 0;
  // y = (x - mean) * invstd * scale + shift, per channel.
  virtual void channel_normalize(const float* x, const float* mean, const float* invstd,
                                 const float* scale, const float* shift, float* y, i64 outer,
                                 i64 channels, i64 inner) = 0;
  // Per channel: sum dy and sum dy * (x - mean) * invstd (overwritten).
  virtual void channel_backward_moments(const float* x, const float* dy, const float* mean,
                                        const float* invstd, float* sum_dy, float* sum_dy_xhat,
                                        i64 outer, i64 channels, i64 inner) = 0;
  // dx += scale * invstd * (dy - mean_dy - xhat * mean_dy_xhat), with the means over `count`
  // elements per channel (the whole batch, summed over every sample partition).
  virtual void channel_normalize_backward(const float* x, const float* dy, const float* mean,
                                          const float* invstd, const float* scale,
                                          const float* sum_dy, const float* sum_dy_xhat,
                                          double count, float* dx, i64 outer, i64 channels,
                                          i64 inner) = 0;

  // Layer normalisation of `rows` rows of `cols` values; mean and rstd (per row) are saved. With
  // `rms` (RMSNorm) nothing is subtracted: mean is 0 and rstd = 1 / sqrt(mean(x^2) + epsilon).
  virtual void layer_norm(const float* x, const float* gamma, const float* beta, float* y,
                          float* mean, float* rstd, i64 rows, i64 cols, float epsilon,
                          bool rms) = 0;
  virtual void layer_norm_backward(const float* x, const float* gamma, const float* mean,
                                   const float* rstd, const float* dy, float* dx, float* dgamma,
                                   float* dbeta, i64 rows, i64 cols, bool rms) = 0;

  // Embedding rows [row_begin, row_begin + rows) of a table with `cols` columns; indices outside
  // contribute zeros (another rank holds those rows). `bag` indices per output row, summed (or
  // averaged with `mean`). Returns false when an index lies outside [0, num_entries).
  virtual bool embedding(const std::int64_t* indices, i64 count, i64 bag, bool mean,
                         const float* table, i64 row_begin, i64 rows, i64 cols, i64 num_entries,
                         float* y) = 0;
  virtual void embedding_backward(const std::int64_t* indices, i64 count, i64 bag, bool mean,
                                  const float* dy, i64 row_begin, i64 rows, i64 cols,
                                  float* dtable) = 0;

  // Per-row softmax cross-entropy of [rows, classes] logits; returns false on a label outside.
  virtual bool softmax_cross_entropy(const float* logits, const std::int64_t* labels, float* loss,
                                     i64 rows, i64 classes) = 0;
  virtual void softmax_cross_entropy_backward(const float* logits, const std::int64_t* labels,
                                              const float* dloss, float* dlogits, i64 rows,
                                              i64 classes) = 0;
  // Per-row mean squared error of [rows, cols].
  virtual void mse(const float* p, const float* t, float* loss, i64 rows, i64 cols) = 0;
  virtual void mse_backward(const float* p, const float* t, const float* dloss, float* dp,
                            float* dt, i64 rows, i64 cols) = 0;

  // Optimizers (in place). Adam's bias corrections are passed in (they depend on the step).
  virtual void sgd(float* w, const float* g, float lr, i64 n) = 0;
  virtual void sgd_momentum(float* w, const float* g, float* v, float lr, float momentum,
                            i64 n) = 0;
  virtual void adam(float* w, const float* g, float* m, float* v, float lr, float beta1,
                    float beta2, float epsilon, float correction1, float correction2, i64 n) = 0;
};

std::unique_ptr<DeviceBackend> make_cpu_backend(int threads);
#if defined(UNITY_HAVE_CUDA)
// Device `device` of this process; throws std::runtime_error naming the failing call.
std::unique_ptr<DeviceBackend> make_cuda_backend(int device);
#endif

}  // namespace unity::executor
