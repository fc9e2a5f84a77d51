// CUDA backend: device, stream, handles, memory, box copies, GEMMs, and the small vector kernels.
#include <stdexcept>
#include <type_traits>
#include <string>

#include "cuda_backend.h"

namespace unity::executor {

std::unique_ptr<DeviceBackend> make_cuda_backend(int device) { return std::make_unique<cuda::CudaBackend>(device); }

namespace cuda {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}
void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(status)));
}
void check(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + cudnnGetErrorString(status));
}

Dims dims_of(const std::vector<i64>& v) {
  if (v.size() > static_cast<std::size_t>(kMaxRank))
    throw std::runtime_error("the CUDA backend handles tensors of rank up to 8, got " + std::to_string(v.size()));
  Dims d;
  d.rank = static_cast<int>(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) d.size[i] = v[i];
  return d;
}

namespace {

__global__ void fill_kernel(float* p, float v, long long n) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) p[i] = v;
}

__global__ void axpy_kernel(float a, const float* x, float* y, long long n) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) y[i] += a * x[i];
}

__global__ void scale_kernel(float a, float* y, long long n) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) y[i] *= a;
}

__global__ void sum_kernel(const float* x, long long n, double* out) {
  __shared__ double partial[256];
  double s = 0;
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) s += x[i];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int w = 128; w > 0; w >>= 1) {
    if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, partial[0]);
}

// One thread per element of the box: its offsets in the source and destination buffers.
template <typename T>
__global__ void box_kernel(const T* src, T* dst, Dims extent, Dims src_shape, Dims src_off, Dims dst_shape,
                           Dims dst_off, long long n, bool add) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) {
    long long rest = i, so = 0, dof = 0, ss = 1, ds = 1;
    for (int d = extent.rank - 1; d >= 0; --d) {
      const long long idx = rest % extent.size[d];
      rest /= extent.size[d];
      so += (idx + src_off.size[d]) * ss;
      dof += (idx + dst_off.size[d]) * ds;
      ss *= src_shape.size[d];
      ds *= dst_shape.size[d];
    }
    if constexpr (std::is_same_v<T, float>) {
      if (add) {
        dst[dof] += src[so];
        continue;
      }
    }
    dst[dof] = src[so];
  }
}

__global__ void bias_kernel(float* y, const float* bias, long long outer, long long channels, long long inner) {
  const long long n = outer * channels * inner;
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) y[i] += bias[(i / inner) % channels];
}

// One block per channel: sum over outer and inner.
__global__ void bias_grad_kernel(const float* dy, float* db, long long outer, long long channels, long long inner) {
  __shared__ float partial[256];
  const long long c = blockIdx.x;
  float s = 0;
  for (long long j = threadIdx.x; j < outer * inner; j += 256) {
    const long long o = j / inner, i = j % inner;
    s += dy[(o * channels + c) * inner + i];
  }
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int w = 128; w > 0; w >>= 1) {
    if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) db[c] += partial[0];
}

__global__ void sgd_kernel(float* w, const float* g, float lr, long long n) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) w[i] -= lr * g[i];
}

__global__ void momentum_kernel(float* w, const float* g, float* v, float lr, float mu, long long n) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) {
    v[i] = mu * v[i] + g[i];
    w[i] -= lr * v[i];
  }
}

__global__ void adam_kernel(float* w, const float* g, float* m, float* v, float lr, float b1, float b2, float eps,
                            float c1, float c2, long long n) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) {
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    w[i] -= lr * (m[i] / c1) / (sqrtf(v[i] / c2) + eps);
  }
}

}  // namespace

CudaBackend::CudaBackend(int device) : device_(device) {
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (count == 0) throw std::runtime_error("no CUDA device");
  device_ = device % count;
  check(cudaSetDevice(device_), "cudaSetDevice");
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cublasCreate(&cublas_), "cublasCreate");
  check(cublasSetStream(cublas_, stream_), "cublasSetStream");
  // Deterministic, full fp32 GEMMs: TF32 would change results against the one-rank reference.
  check(cublasSetMathMode(cublas_, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
  check(cudnnCreate(&cudnn_), "cudnnCreate");
  check(cudnnSetStream(cudnn_, stream_), "cudnnSetStream");
}

CudaBackend::~CudaBackend() {
  for (void* p : scratch_)
    if (p) cudaFree(p);
  if (cudnn_) cudnnDestroy(cudnn_);
  if (cublas_) cublasDestroy(cublas_);
  if (stream_) cudaStreamDestroy(stream_);
}

void* CudaBackend::scratch(int slot, std::size_t bytes) {
  if (scratch_bytes_[slot] < bytes) {
    synchronize();
    if (scratch_[slot]) cudaFree(scratch_[slot]);
    check(cudaMalloc(&scratch_[slot], bytes), "cudaMalloc (scratch)");
    scratch_bytes_[slot] = bytes;
  }
  return scratch_[slot];
}

void* CudaBackend::allocate(std::size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes ? bytes : 64), "cudaMalloc");
  check(cudaMemsetAsync(p, 0, bytes ? bytes : 64, stream_), "cudaMemset");
  return p;
}

void CudaBackend::release(void* p) {
  synchronize();
  cudaFree(p);
}

void CudaBackend::fill_zero(void* p, std::size_t bytes) { check(cudaMemsetAsync(p, 0, bytes, stream_), "cudaMemset"); }

void CudaBackend::fill(float* p, float value, i64 n) { fill_kernel<<<blocks_for(n), 256, 0, stream_>>>(p, value, n); }

void CudaBackend::to_device(void* dst, const void* host, std::size_t bytes) {
  check(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpy (to device)");
  synchronize();  // the host buffer may go away
}

void CudaBackend::to_host(void* host, const void* src, std::size_t bytes) {
  check(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpy (to host)");
  synchronize();
}

void CudaBackend::copy(void* dst, const void* src, std::size_t bytes) {
  if (dst != src) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpy");
}

void CudaBackend::copy_box(const BoxCopy& c) {
  if (c.extent.empty()) {  // a scalar
    if (c.add)
      axpy(1.0f, static_cast<const float*>(c.src), static_cast<float*>(c.dst), 1);
    else
      copy(c.dst, c.src, static_cast<std::size_t>(c.elem_size));
    return;
  }
  i64 n = 1;
  for (auto e : c.extent) n *= e;
  if (n <= 0) return;
  const Dims extent = dims_of(c.extent), ss = dims_of(c.src_shape), so = dims_of(c.src_offset),
             ds = dims_of(c.dst_shape), dof = dims_of(c.dst_offset);
  if (c.elem_size == 8)
    box_kernel<long long><<<blocks_for(n), 256, 0, stream_>>>(static_cast<const long long*>(c.src),
                                                              static_cast<long long*>(c.dst), extent, ss, so, ds, dof,
                                                              n, false);
  else
    box_kernel<float><<<blocks_for(n), 256, 0, stream_>>>(static_cast<const float*>(c.src), static_cast<float*>(c.dst),
                                                          extent, ss, so, ds, dof, n, c.add);
  check(cudaGetLastError(), "box copy");
}

void CudaBackend::synchronize() { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

void CudaBackend::axpy(float alpha, const float* x, float* y, i64 n) {
  if (n > 0) axpy_kernel<<<blocks_for(n), 256, 0, stream_>>>(alpha, x, y, n);
}

void CudaBackend::scale(float alpha, float* y, i64 n) {
  if (n > 0) scale_kernel<<<blocks_for(n), 256, 0, stream_>>>(alpha, y, n);
}

double CudaBackend::sum(const float* x, i64 n) {
  auto* out = static_cast<double*>(scratch(3, sizeof(double)));
  check(cudaMemsetAsync(out, 0, sizeof(double), stream_), "cudaMemset");
  if (n > 0) sum_kernel<<<blocks_for(n), 256, 0, stream_>>>(x, n, out);
  double host = 0;
  to_host(&host, out, sizeof host);
  return host;
}

void CudaBackend::gemm(bool trans_a, bool trans_b, i64 m, i64 n, i64 k, float alpha, const float* a, i64 lda,
                       const float* b, i64 ldb, float beta, float* c, i64 ldc, i64 batch, i64 stride_a,
                       i64 stride_b, i64 stride_c) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    // C = beta * C: a GEMM over nothing.
    for (i64 i = 0; i < batch; ++i)
      for (i64 r = 0; r < m; ++r) scale(beta, c + i * stride_c + r * ldc, n);
    return;
  }
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  const cublasOperation_t ob = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t oa = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(cublasSgemmStridedBatched(cublas_, ob, oa, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                                  &alpha, b, static_cast<int>(ldb), stride_b, a, static_cast<int>(lda), stride_a,
                                  &beta, c, static_cast<int>(ldc), stride_c, static_cast<int>(batch)),
        "cublasSgemmStridedBatched");
}

void CudaBackend::add_bias(float* y, const float* bias, i64 outer, i64 channels, i64 inner) {
  const i64 n = outer * channels * inner;
  if (n > 0) bias_kernel<<<blocks_for(n), 256, 0, stream_>>>(y, bias, outer, channels, inner);
}

void CudaBackend::bias_grad(const float* dy, float* db, i64 outer, i64 channels, i64 inner) {
  if (channels > 0) bias_grad_kernel<<<static_cast<unsigned>(channels), 256, 0, stream_>>>(dy, db, outer, channels, inner);
}

void CudaBackend::sgd(float* w, const float* g, float lr, i64 n) {
  if (n > 0) sgd_kernel<<<blocks_for(n), 256, 0, stream_>>>(w, g, lr, n);
}

void CudaBackend::sgd_momentum(float* w, const float* g, float* v, float lr, float momentum, i64 n) {
  if (n > 0) momentum_kernel<<<blocks_for(n), 256, 0, stream_>>>(w, g, v, lr, momentum, n);
}

void CudaBackend::adam(float* w, const float* g, float* m, float* v, float lr, float beta1, float beta2, float epsilon,
                       float correction1, float correction2, i64 n) {
  if (n > 0)
    adam_kernel<<<blocks_for(n), 256, 0, stream_>>>(w, g, m, v, lr, beta1, beta2, epsilon, correction1, correction2, n);
}

}  // namespace cuda
}  // namespace unity::executor
