// CUDA normalisation, embedding and loss kernels. Reductions run one block per channel or row.
#include "cuda_backend.h"

namespace unity::executor::cuda {
namespace {

#define GRID_LOOP(i, n) for (long long i = blockIdx.x * 256LL + threadIdx.x; i < (n); i += 256LL * gridDim.x)

// Block-wide sum of 256 threads' values (every thread gets the total).
__device__ float block_sum(float v, float* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int w = 128; w > 0; w >>= 1) {
    if (threadIdx.x < w) shared[threadIdx.x] += shared[threadIdx.x + w];
    __syncthreads();
  }
  const float total = shared[0];
  __syncthreads();
  return total;
}

__global__ void sums_kernel(const float* x, float* sum, long long outer, long long channels, long long inner) {
  __shared__ float shared[256];
  const long long c = blockIdx.x;
  float s = 0;
  for (long long j = threadIdx.x; j < outer * inner; j += 256) s += x[((j / inner) * channels + c) * inner + j % inner];
  s = block_sum(s, shared);
  if (threadIdx.x == 0) sum[c] = s;
}

__global__ void deviations_kernel(const float* x, const float* mean, float* out, long long outer, long long channels,
                                  long long inner) {
  __shared__ float shared[256];
  const long long c = blockIdx.x;
  float q = 0;
  for (long long j = threadIdx.x; j < outer * inner; j += 256) {
    const float d = x[((j / inner) * channels + c) * inner + j % inner] - mean[c];
    q += d * d;
  }
  q = block_sum(q, shared);
  if (threadIdx.x == 0) out[c] = q;
}

__global__ void inverse_std_kernel(const float* sq, double count, float eps, float* invstd, long long channels) {
  GRID_LOOP(c, channels) invstd[c] = static_cast<float>(1.0 / sqrt(sq[c] / count + eps));
}

__global__ void normalize_kernel(const float* x, const float* mean, const float* invstd, const float* scale,
                                 const float* shift, float* y, long long outer, long long channels, long long inner) {
  GRID_LOOP(i, outer * channels * inner) {
    const long long c = (i / inner) % channels;
    y[i] = (x[i] - mean[c]) * invstd[c] * scale[c] + shift[c];
  }
}

__global__ void backward_moments_kernel(const float* x, const float* dy, const float* mean, const float* invstd,
                                        float* sum_dy, float* sum_dy_xhat, long long outer, long long channels,
                                        long long inner) {
  __shared__ float shared[256];
  const long long c = blockIdx.x;
  float s = 0, t = 0;
  for (long long j = threadIdx.x; j < outer * inner; j += 256) {
    const long long i = ((j / inner) * channels + c) * inner + j % inner;
    s += dy[i];
    t += dy[i] * (x[i] - mean[c]) * invstd[c];
  }
  s = block_sum(s, shared);
  t = block_sum(t, shared);
  if (threadIdx.x == 0) {
    sum_dy[c] = s;
    sum_dy_xhat[c] = t;
  }
}

__global__ void normalize_backward_kernel(const float* x, const float* dy, const float* mean, const float* invstd,
                                          const float* scale, const float* sum_dy, const float* sum_dy_xhat,
                                          double count, float* dx, long long outer, long long channels,
                                          long long inner) {
  GRID_LOOP(i, outer * channels * inner) {
    const long long c = (i / inner) % channels;
    const float xhat = (x[i] - mean[c]) * invstd[c];
    dx[i] += scale[c] * invstd[c] *
             (dy[i] - static_cast<float>(sum_dy[c] / count) - xhat * static_cast<float>(sum_dy_xhat[c] / count));
  }
}

__global__ void layer_norm_kernel(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                                  float* rstd, long long cols, float eps, bool rms) {
  __shared__ float shared[256];
  const long long r = blockIdx.x;
  const float* p = x + r * cols;
  float s = 0;
  for (long long c = threadIdx.x; c < cols; c += 256) s += p[c];
  const float total = block_sum(s, shared);  // every thread takes part in the sum, RMSNorm too
  const float m = rms ? 0.0f : total / static_cast<float>(cols);
  float v = 0;
  for (long long c = threadIdx.x; c < cols; c += 256) v += (p[c] - m) * (p[c] - m);
  const float is = rsqrtf(block_sum(v, shared) / static_cast<float>(cols) + eps);
  if (threadIdx.x == 0) {
    mean[r] = m;
    rstd[r] = is;
  }
  for (long long c = threadIdx.x; c < cols; c += 256) {
    const float h = (p[c] - m) * is;
    y[r * cols + c] = gamma ? h * gamma[c] + (beta ? beta[c] : 0.0f) : h;
  }
}

__global__ void layer_norm_backward_kernel(const float* x, const float* gamma, const float* mean, const float* rstd,
                                           const float* dy, float* dx, float* dgamma, float* dbeta, long long cols,
                                           bool rms) {
  __shared__ float shared[256];
  const long long r = blockIdx.x;
  const float* p = x + r * cols;
  const float* g = dy + r * cols;
  float a = 0, b = 0;
  for (long long c = threadIdx.x; c < cols; c += 256) {
    const float xhat = (p[c] - mean[r]) * rstd[r];
    const float gg = g[c] * (gamma ? gamma[c] : 1.0f);
    a += gg;
    b += gg * xhat;
    if (dgamma) atomicAdd(dgamma + c, g[c] * xhat);
    if (dbeta) atomicAdd(dbeta + c, g[c]);
  }
  a = block_sum(a, shared) / static_cast<float>(cols);
  if (rms) a = 0;  // RMSNorm subtracts no mean: no mean-of-gradient term
  b = block_sum(b, shared) / static_cast<float>(cols);
  if (!dx) return;
  for (long long c = threadIdx.x; c < cols; c += 256) {
    const float xhat = (p[c] - mean[r]) * rstd[r];
    const float gg = g[c] * (gamma ? gamma[c] : 1.0f);
    dx[r * cols + c] += rstd[r] * (gg - a - xhat * b);
  }
}

// One thread per output element (row i, column c).
__global__ void embedding_kernel(const long long* idx, long long count, long long bag, bool mean, const float* table,
                                 long long row_begin, long long rows, long long cols, long long entries, float* y,
                                 int* bad) {
  const float w = mean ? 1.0f / static_cast<float>(bag) : 1.0f;
  GRID_LOOP(e, count * cols) {
    const long long i = e / cols, c = e % cols;
    float acc = 0;
    for (long long j = 0; j < bag; ++j) {
      const long long id = idx[i * bag + j];
      if (id < 0 || id >= entries) {
        *bad = 1;
        continue;
      }
      const long long local = id - row_begin;
      if (local >= 0 && local < rows) acc += w * table[local * cols + c];
    }
    y[e] = acc;
  }
}

__global__ void embedding_backward_kernel(const long long* idx, long long count, long long bag, bool mean,
                                          const float* dy, long long row_begin, long long rows, long long cols,
                                          float* dtable) {
  const float w = mean ? 1.0f / static_cast<float>(bag) : 1.0f;
  GRID_LOOP(e, count * cols) {
    const long long i = e / cols, c = e % cols;
    for (long long j = 0; j < bag; ++j) {
      const long long local = idx[i * bag + j] - row_begin;
      if (local >= 0 && local < rows) atomicAdd(dtable + local * cols + c, w * dy[e]);
    }
  }
}

__global__ void cross_entropy_kernel(const float* z, const long long* labels, float* loss, long long rows,
                                     long long classes, int* bad) {
  GRID_LOOP(r, rows) {
    const float* p = z + r * classes;
    const long long label = labels[r];
    if (label < 0 || label >= classes) {
      *bad = 1;
      loss[r] = 0;
      continue;
    }
    float m = p[0];
    for (long long c = 1; c < classes; ++c) m = fmaxf(m, p[c]);
    double total = 0;
    for (long long c = 0; c < classes; ++c) total += exp(static_cast<double>(p[c] - m));
    loss[r] = static_cast<float>(log(total) + m - p[label]);
  }
}

__global__ void cross_entropy_backward_kernel(const float* z, const long long* labels, const float* dloss, float* dz,
                                              long long rows, long long classes) {
  GRID_LOOP(r, rows) {
    const float* p = z + r * classes;
    float m = p[0];
    for (long long c = 1; c < classes; ++c) m = fmaxf(m, p[c]);
    float total = 0;
    for (long long c = 0; c < classes; ++c) total += expf(p[c] - m);
    const float inv = dloss[r] / total;
    for (long long c = 0; c < classes; ++c) dz[r * classes + c] += expf(p[c] - m) * inv;
    dz[r * classes + labels[r]] -= dloss[r];
  }
}

__global__ void mse_kernel(const float* p, const float* t, float* loss, long long rows, long long cols) {
  GRID_LOOP(r, rows) {
    double s = 0;
    for (long long c = 0; c < cols; ++c) {
      const double d = static_cast<double>(p[r * cols + c]) - t[r * cols + c];
      s += d * d;
    }
    loss[r] = static_cast<float>(s / static_cast<double>(cols));
  }
}

__global__ void mse_backward_kernel(const float* p, const float* t, const float* dloss, float* dp, float* dt,
                                    long long rows, long long cols) {
  const float k = 2.0f / static_cast<float>(cols);
  GRID_LOOP(i, rows * cols) {
    const float g = k * (p[i] - t[i]) * dloss[i / cols];
    if (dp) dp[i] += g;
    if (dt) dt[i] -= g;
  }
}

}  // namespace

void CudaBackend::channel_sums(const float* x, float* sum, i64 outer, i64 channels, i64 inner) {
  if (channels > 0) sums_kernel<<<static_cast<unsigned>(channels), 256, 0, stream_>>>(x, sum, outer, channels, inner);
}

void CudaBackend::channel_squared_deviations(const float* x, const float* mean, float* out, i64 outer, i64 channels,
                                             i64 inner) {
  if (channels > 0)
    deviations_kernel<<<static_cast<unsigned>(channels), 256, 0, stream_>>>(x, mean, out, outer, channels, inner);
}

void CudaBackend::inverse_std(const float* squared_deviations, double count, float epsilon, float* invstd,
                              i64 channels) {
  if (channels > 0)
    inverse_std_kernel<<<blocks_for(channels), 256, 0, stream_>>>(squared_deviations, count, epsilon, invstd, channels);
}

void CudaBackend::channel_normalize(const float* x, const float* mean, const float* invstd, const float* scale,
                                    const float* shift, float* y, i64 outer, i64 channels, i64 inner) {
  const i64 n = outer * channels * inner;
  if (n > 0) normalize_kernel<<<blocks_for(n), 256, 0, stream_>>>(x, mean, invstd, scale, shift, y, outer, channels, inner);
}

void CudaBackend::channel_backward_moments(const float* x, const float* dy, const float* mean, const float* invstd,
                                           float* sum_dy, float* sum_dy_xhat, i64 outer, i64 channels, i64 inner) {
  if (channels > 0)
    backward_moments_kernel<<<static_cast<unsigned>(channels), 256, 0, stream_>>>(x, dy, mean, invstd, sum_dy,
                                                                                  sum_dy_xhat, outer, channels, inner);
}

void CudaBackend::channel_normalize_backward(const float* x, const float* dy, const float* mean, const float* invstd,
                                             const float* scale, const float* sum_dy, const float* sum_dy_xhat,
                                             double count, float* dx, i64 outer, i64 channels, i64 inner) {
  const i64 n = outer * channels * inner;
  if (n > 0)
    normalize_backward_kernel<<<blocks_for(n), 256, 0, stream_>>>(x, dy, mean, invstd, scale, sum_dy, sum_dy_xhat,
                                                                  count, dx, outer, channels, inner);
}

void CudaBackend::layer_norm(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                             i64 rows, i64 cols, float epsilon, bool rms) {
  if (rows > 0)
    layer_norm_kernel<<<static_cast<unsigned>(rows), 256, 0, stream_>>>(x, gamma, beta, y, mean, rstd, cols, epsilon,
                                                                       rms);
}

void CudaBackend::layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                                      const float* dy, float* dx, float* dgamma, float* dbeta, i64 rows, i64 cols,
                                      bool rms) {
  if (rows > 0)
    layer_norm_backward_kernel<<<static_cast<unsigned>(rows), 256, 0, stream_>>>(x, gamma, mean, rstd, dy, dx, dgamma,
                                                                                dbeta, cols, rms);
}

bool CudaBackend::embedding(const std::int64_t* indices, i64 count, i64 bag, bool mean, const float* table,
                            i64 row_begin, i64 rows, i64 cols, i64 num_entries, float* y) {
  auto* bad = static_cast<int*>(scratch(2, sizeof(int)));
  fill_zero(bad, sizeof(int));
  if (count * cols > 0)
    embedding_kernel<<<blocks_for(count * cols), 256, 0, stream_>>>(reinterpret_cast<const long long*>(indices), count,
                                                                    bag, mean, table, row_begin, rows, cols,
                                                                    num_entries, y, bad);
  int host = 0;
  to_host(&host, bad, sizeof host);
  return host == 0;
}

void CudaBackend::embedding_backward(const std::int64_t* indices, i64 count, i64 bag, bool mean, const float* dy,
                                     i64 row_begin, i64 rows, i64 cols, float* dtable) {
  if (count * cols > 0)
    embedding_backward_kernel<<<blocks_for(count * cols), 256, 0, stream_>>>(
        reinterpret_cast<const long long*>(indices), count, bag, mean, dy, row_begin, rows, cols, dtable);
}

bool CudaBackend::softmax_cross_entropy(const float* logits, const std::int64_t* labels, float* loss, i64 rows,
                                        i64 classes) {
  auto* bad = static_cast<int*>(scratch(2, sizeof(int)));
  fill_zero(bad, sizeof(int));
  if (rows > 0)
    cross_entropy_kernel<<<blocks_for(rows), 256, 0, stream_>>>(logits, reinterpret_cast<const long long*>(labels), loss,
                                                                rows, classes, bad);
  int host = 0;
  to_host(&host, bad, sizeof host);
  return host == 0;
}

void CudaBackend::softmax_cross_entropy_backward(const float* logits, const std::int64_t* labels, const float* dloss,
                                                 float* dlogits, i64 rows, i64 classes) {
  if (rows > 0)
    cross_entropy_backward_kernel<<<blocks_for(rows), 256, 0, stream_>>>(
        logits, reinterpret_cast<const long long*>(labels), dloss, dlogits, rows, classes);
}

void CudaBackend::mse(const float* p, const float* t, float* loss, i64 rows, i64 cols) {
  if (rows > 0) mse_kernel<<<blocks_for(rows), 256, 0, stream_>>>(p, t, loss, rows, cols);
}

void CudaBackend::mse_backward(const float* p, const float* t, const float* dloss, float* dp, float* dt, i64 rows,
                               i64 cols) {
  if (rows * cols > 0) mse_backward_kernel<<<blocks_for(rows * cols), 256, 0, stream_>>>(p, t, dloss, dp, dt, rows, cols);
}

}  // namespace unity::executor::cuda
