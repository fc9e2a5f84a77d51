// Host memory, box copies, and the small vector kernels of the CPU backend.
#include <cblas.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "cpu_backend.h"
#include "lane_sum.h"

namespace unity::executor {

std::unique_ptr<DeviceBackend> make_cpu_backend(int threads) {
  return std::make_unique<cpu::CpuBackend>(threads);
}

namespace cpu {

CpuBackend::CpuBackend(int threads) { openblas_set_num_threads(threads < 1 ? 1 : threads); }

std::vector<i64> strides_of(const std::vector<i64>& shape) {
  std::vector<i64> s(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

void* CpuBackend::allocate(std::size_t bytes) {
  if (bytes == 0) bytes = 64;
  // 64-byte alignment: whole cache lines, and what AVX-512 loads like.
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return p;
}

void CpuBackend::release(void* p) { std::free(p); }
void CpuBackend::fill_zero(void* p, std::size_t bytes) { std::memset(p, 0, bytes); }
void CpuBackend::fill(float* p, float value, i64 n) {
  for (i64 i = 0; i < n; ++i) p[i] = value;
}
void CpuBackend::to_device(void* dst, const void* host, std::size_t bytes) {
  std::memcpy(dst, host, bytes);
}
void CpuBackend::to_host(void* host, const void* src, std::size_t bytes) {
  std::memcpy(host, src, bytes);
}
void CpuBackend::copy(void* dst, const void* src, std::size_t bytes) {
  if (dst != src) std::memmove(dst, src, bytes);
}

namespace {

void box_recurse(const BoxCopy& c, int d, const std::vector<i64>& ss, const std::vector<i64>& ds,
                 const char* src, char* dst) {
  const int rank = static_cast<int>(c.extent.size());
  const i64 es = c.elem_size;
  if (d == rank - 1) {
    const i64 n = c.extent[d];
    if (!c.add) {
      std::memcpy(dst, src, static_cast<std::size_t>(n * es));
    } else {
      const float* s = reinterpret_cast<const float*>(src);
      float* t = reinterpret_cast<float*>(dst);
      for (i64 i = 0; i < n; ++i) t[i] += s[i];
    }
    return;
  }
  for (i64 i = 0; i < c.extent[d]; ++i)
    box_recurse(c, d + 1, ss, ds, src + i * ss[d] * es, dst + i * ds[d] * es);
}

}  // namespace

void CpuBackend::copy_box(const BoxCopy& c) { copy_box_host(c); }

void copy_box_host(const BoxCopy& c) {
  const int rank = static_cast<int>(c.extent.size());
  if (rank == 0) {  // a scalar
    if (c.add)
      *static_cast<float*>(c.dst) += *static_cast<const float*>(c.src);
    else
      std::memcpy(c.dst, c.src, static_cast<std::size_t>(c.elem_size));
    return;
  }
  for (auto e : c.extent)
    if (e <= 0) return;
  const auto ss = strides_of(c.src_shape);
  const auto ds = strides_of(c.dst_shape);
  i64 so = 0, dof = 0;
  for (int d = 0; d < rank; ++d) {
    so += c.src_offset[d] * ss[d];
    dof += c.dst_offset[d] * ds[d];
  }
  box_recurse(c, 0, ss, ds, static_cast<const char*>(c.src) + so * c.elem_size,
              static_cast<char*>(c.dst) + dof * c.elem_size);
}

void CpuBackend::axpy(float alpha, const float* x, float* y, i64 n) {
  const float* __restrict in = x;
  float* __restrict out = y;
  for (i64 i = 0; i < n; ++i) out[i] += alpha * in[i];
}

void CpuBackend::scale(float alpha, float* y, i64 n) {
  for (i64 i = 0; i < n; ++i) y[i] *= alpha;
}

double CpuBackend::sum(const float* x, i64 n) {
  return lane_sum(n, [x](i64 i) { return double{x[i]}; });
}

void CpuBackend::gemm(bool trans_a, bool trans_b, i64 m, i64 n, i64 k, float alpha, const float* a,
                      i64 lda, const float* b, i64 ldb, float beta, float* c, i64 ldc, i64 batch,
                      i64 stride_a, i64 stride_b, i64 stride_c) {
  if (m <= 0 || n <= 0) return;
  for (i64 i = 0; i < batch; ++i) {
    if (k <= 0) {
      if (beta != 1.0f)
        for (i64 r = 0; r < m; ++r)
          for (i64 col = 0; col < n; ++col) c[i * stride_c + r * ldc + col] *= beta;
      continue;
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
                static_cast<blasint>(n), static_cast<blasint>(k), alpha, a + i * stride_a,
                static_cast<blasint>(lda), b + i * stride_b, static_cast<blasint>(ldb), beta,
                c + i * stride_c, static_cast<blasint>(ldc));
  }
}

void CpuBackend::add_bias(float* y, const float* bias, i64 outer, i64 channels, i64 inner) {
  for (i64 o = 0; o < outer; ++o) {
    if (inner == 1) {
      float* __restrict row = y + o * channels;
      const float* __restrict b = bias;
      for (i64 c = 0; c < channels; ++c) row[c] += b[c];
      continue;
    }
    for (i64 c = 0; c < channels; ++c) {
      float* __restrict row = y + (o * channels + c) * inner;
      const float b = bias[c];
      for (i64 i = 0; i < inner; ++i) row[i] += b;
    }
  }
}

void CpuBackend::bias_grad(const float* dy, float* db, i64 outer, i64 channels, i64 inner) {
  if (inner == 1) {
    float* __restrict out = db;
    for (i64 o = 0; o < outer; ++o) {
      const float* __restrict row = dy + o * channels;
      for (i64 c = 0; c < channels; ++c) out[c] += row[c];
    }
    return;
  }
  for (i64 o = 0; o < outer; ++o)
    for (i64 c = 0; c < channels; ++c) {
      const float* row = dy + (o * channels + c) * inner;
      db[c] += static_cast<float>(lane_sum(inner, [row](i64 i) { return double{row[i]}; }));
    }
}

void CpuBackend::sgd(float* w, const float* g, float lr, i64 n) {
  float* __restrict ws = w;
  const float* __restrict gs = g;
  for (i64 i = 0; i < n; ++i) ws[i] -= lr * gs[i];
}

void CpuBackend::sgd_momentum(float* w, const float* g, float* v, float lr, float momentum, i64 n) {
  for (i64 i = 0; i < n; ++i) {
    v[i] = momentum * v[i] + g[i];
    w[i] -= lr * v[i];
  }
}

void CpuBackend::adam(float* w, const float* g, float* m, float* v, float lr, float beta1,
                      float beta2, float epsilon, float correction1, float correction2, i64 n) {
  // Distinct arrays (`__restrict`) and divisions by constants turned into products let the
  // compiler vectorise the loop: scalar, its divisions and square root made the update several
  // times slower than the memory traffic it needs.
  float* __restrict ws = w;
  const float* __restrict gs = g;
  float* __restrict ms = m;
  float* __restrict vs = v;
  const float step = lr / correction1;
  const float inv_correction2 = 1.0f / correction2;
  for (i64 i = 0; i < n; ++i) {
    const float mi = beta1 * ms[i] + (1 - beta1) * gs[i];
    const float vi = beta2 * vs[i] + (1 - beta2) * gs[i] * gs[i];
    ms[i] = mi;
    vs[i] = vi;
    ws[i] -= step * mi / (std::sqrt(vi * inv_correction2) + epsilon);
  }
}

float* CpuBackend::workspace(i64 elements) {
  if (static_cast<i64>(workspace_.size()) < elements)
    workspace_.resize(static_cast<std::size_t>(elements));
  return workspace_.data();
}

}  // namespace cpu
}  // namespace unity::executor
