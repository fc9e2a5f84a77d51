// CUDA element-wise, broadcasting, dropout, softmax, reduction and transpose kernels. The dropout
// hash is the CPU backend's, bit for bit, so masks agree across backends and with the reference.
#include "cuda_backend.h"

namespace unity::executor::cuda {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;
constexpr float kTwoOverSqrtPi = 1.12837916709551257f;

#define GRID_LOOP(i, n) for (long long i = blockIdx.x * 256LL + threadIdx.x; i < (n); i += 256LL * gridDim.x)

__device__ float apply(UnaryKind k, float s, float v) {
  switch (k) {
    case UnaryKind::Relu: return v > 0 ? v : 0.0f;
    case UnaryKind::Gelu: return 0.5f * v * (1.0f + erff(v * kInvSqrt2));
    case UnaryKind::Sigmoid: return 1.0f / (1.0f + expf(-v));
    case UnaryKind::Tanh: return tanhf(v);
    case UnaryKind::Exp: return expf(v);
    case UnaryKind::Sqrt: return sqrtf(v);
    case UnaryKind::Erf: return erff(v);
    case UnaryKind::ScalarAdd: return v + s;
    case UnaryKind::ScalarMul: return v * s;
    case UnaryKind::Pow: return powf(v, s);
    default: return v;
  }
}

__device__ float derivative(UnaryKind k, float s, float x, float y) {
  switch (k) {
    case UnaryKind::Relu: return y > 0 ? 1.0f : 0.0f;
    case UnaryKind::Gelu: return 0.5f * (1.0f + erff(x * kInvSqrt2)) + x * kInvSqrt2Pi * expf(-0.5f * x * x);
    case UnaryKind::Sigmoid: return y * (1.0f - y);
    case UnaryKind::Tanh: return 1.0f - y * y;
    case UnaryKind::Exp: return y;
    case UnaryKind::Sqrt: return 0.5f / y;
    case UnaryKind::Erf: return kTwoOverSqrtPi * expf(-x * x);
    case UnaryKind::ScalarMul: return s;
    case UnaryKind::Pow: return s * powf(x, s - 1.0f);
    default: return 1.0f;
  }
}

__global__ void unary_kernel(UnaryKind k, float s, const float* x, float* y, long long n) {
  GRID_LOOP(i, n) y[i] = apply(k, s, x[i]);
}

__global__ void unary_backward_kernel(UnaryKind k, float s, const float* x, const float* y, const float* dy, float* dx,
                                      long long n) {
  GRID_LOOP(i, n) dx[i] += dy[i] * derivative(k, s, x ? x[i] : 0.0f, y ? y[i] : 0.0f);
}

// Offsets into a and b of output element i under broadcasting (shapes aligned to the output's rank).
__device__ void broadcast_offsets(long long i, const Dims& out, const Dims& a, const Dims& b, long long& ia,
                                  long long& ib) {
  long long sa = 1, sb = 1;
  ia = ib = 0;
  for (int d = out.rank - 1; d >= 0; --d) {
    const long long idx = i % out.size[d];
    i /= out.size[d];
    if (a.size[d] != 1) ia += idx * sa;
    if (b.size[d] != 1) ib += idx * sb;
    sa *= a.size[d];
    sb *= b.size[d];
  }
}

__global__ void binary_kernel(BinaryKind k, Dims out, Dims as, Dims bs, const float* a, const float* b, float* y,
                              long long n) {
  GRID_LOOP(i, n) {
    long long ia, ib;
    broadcast_offsets(i, out, as, bs, ia, ib);
    const float u = a[ia], v = b[ib];
    y[i] = k == BinaryKind::Add ? u + v : k == BinaryKind::Sub ? u - v : k == BinaryKind::Mul ? u * v : u / v;
  }
}

__global__ void binary_backward_kernel(BinaryKind k, Dims out, Dims as, Dims bs, const float* a, const float* b,
                                       const float* dy, float* da, float* db, long long n) {
  GRID_LOOP(i, n) {
    long long ia, ib;
    broadcast_offsets(i, out, as, bs, ia, ib);
    const float g = dy[i];
    float ga = g, gb = g;
    switch (k) {
      case BinaryKind::Sub: gb = -g; break;
      case BinaryKind::Mul: ga = g * b[ib]; gb = g * a[ia]; break;
      case BinaryKind::Div: ga = g / b[ib]; gb = -g * a[ia] / (b[ib] * b[ib]); break;
      default: break;
    }
    // Broadcast operands receive from many outputs.
    if (da) atomicAdd(da + ia, ga);
    if (db) atomicAdd(db + ib, gb);
  }
}

__device__ unsigned long long mix(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

__device__ bool keeps(unsigned long long seed, long long g, double rate) {
  const unsigned long long h = mix(seed ^ mix(static_cast<unsigned long long>(g)));
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0) >= rate;
}

__device__ long long global_index(long long i, const Dims& local, const Dims& origin, const Dims& global) {
  long long g = 0, stride = 1;
  for (int d = local.rank - 1; d >= 0; --d) {
    const long long idx = i % local.size[d];
    i /= local.size[d];
    g += (idx + origin.size[d]) * stride;
    stride *= global.size[d];
  }
  return g;
}

__global__ void dropout_kernel(unsigned long long seed, double rate, Dims local, Dims origin, Dims global,
                               const float* x, float* y, long long n, bool backward) {
  const float keep_scale = static_cast<float>(1.0 / (1.0 - rate));
  GRID_LOOP(i, n) {
    const bool keep = keeps(seed, global_index(i, local, origin, global), rate);
    if (backward) {
      if (keep) y[i] += x[i] * keep_scale;
    } else {
      y[i] = keep ? x[i] * keep_scale : 0.0f;
    }
  }
}

// One thread per (outer, inner) row of length `axis`.
__global__ void softmax_kernel(const float* x, float* y, long long outer, long long axis, long long inner) {
  GRID_LOOP(r, outer * inner) {
    const long long base = (r / inner) * axis * inner + r % inner;
    float m = x[base];
    for (long long a = 1; a < axis; ++a) m = fmaxf(m, x[base + a * inner]);
    float total = 0;
    for (long long a = 0; a < axis; ++a) total += expf(x[base + a * inner] - m);
    const float inv = 1.0f / total;
    for (long long a = 0; a < axis; ++a) y[base + a * inner] = expf(x[base + a * inner] - m) * inv;
  }
}

__global__ void softmax_backward_kernel(const float* y, const float* dy, float* dx, long long outer, long long axis,
                                        long long inner) {
  GRID_LOOP(r, outer * inner) {
    const long long base = (r / inner) * axis * inner + r % inner;
    float dot = 0;
    for (long long a = 0; a < axis; ++a) dot += y[base + a * inner] * dy[base + a * inner];
    for (long long a = 0; a < axis; ++a) {
      const long long i = base + a * inner;
      dx[i] += y[i] * (dy[i] - dot);
    }
  }
}

// Input element i's position in the reduced output (dims where out is 1 collapse).
__device__ long long reduced_offset(long long i, const Dims& in, const Dims& out) {
  long long o = 0, stride = 1;
  for (int d = in.rank - 1; d >= 0; --d) {
    const long long idx = i % in.size[d];
    i /= in.size[d];
    if (out.size[d] != 1) o += idx * stride;
    stride *= out.size[d];
  }
  return o;
}

__global__ void reduce_kernel(const float* x, float* y, Dims in, Dims out, float scale, long long n) {
  GRID_LOOP(i, n) atomicAdd(y + reduced_offset(i, in, out), scale * x[i]);
}

__global__ void reduce_backward_kernel(const float* dy, float* dx, Dims in, Dims out, float scale, long long n) {
  GRID_LOOP(i, n) dx[i] += scale * dy[reduced_offset(i, in, out)];
}

// Output element i of a permutation: y dim d is x dim perm[d].
template <typename T>
__global__ void transpose_kernel(const T* x, T* y, Dims xs, Dims perm, long long n, bool add) {
  long long xstride[kMaxRank];
  long long s = 1;
  for (int d = xs.rank - 1; d >= 0; --d) {
    xstride[d] = s;
    s *= xs.size[d];
  }
  GRID_LOOP(i, n) {
    long long rest = i, src = 0;
    for (int d = xs.rank - 1; d >= 0; --d) {
      const long long extent = xs.size[perm.size[d]];
      src += (rest % extent) * xstride[perm.size[d]];
      rest /= extent;
    }
    if constexpr (sizeof(T) == 4) {
      if (add) {
        y[i] += x[src];
        continue;
      }
    }
    y[i] = x[src];
  }
}

long long count(const std::vector<i64>& shape) {
  long long n = 1;
  for (auto e : shape) n *= e;
  return n;
}

}  // namespace

void CudaBackend::unary(UnaryKind k, float scalar, const float* x, float* y, i64 n) {
  if (n > 0) unary_kernel<<<blocks_for(n), 256, 0, stream_>>>(k, scalar, x, y, n);
}

void CudaBackend::unary_backward(UnaryKind k, float scalar, const float* x, const float* y, const float* dy, float* dx,
                                 i64 n) {
  if (n > 0) unary_backward_kernel<<<blocks_for(n), 256, 0, stream_>>>(k, scalar, x, y, dy, dx, n);
}

void CudaBackend::binary(BinaryKind k, const BroadcastShape& s, const float* a, const float* b, float* y) {
  const long long n = count(s.out);
  if (n > 0) binary_kernel<<<blocks_for(n), 256, 0, stream_>>>(k, dims_of(s.out), dims_of(s.a), dims_of(s.b), a, b, y, n);
}

void CudaBackend::binary_backward(BinaryKind k, const BroadcastShape& s, const float* a, const float* b,
                                  const float* dy, float* da, float* db) {
  const long long n = count(s.out);
  if (n > 0)
    binary_backward_kernel<<<blocks_for(n), 256, 0, stream_>>>(k, dims_of(s.out), dims_of(s.a), dims_of(s.b), a, b, dy,
                                                               da, db, n);
}

void CudaBackend::dropout(const DropoutSpec& s, const float* x, float* y) {
  const long long n = count(s.local_shape);
  if (n > 0)
    dropout_kernel<<<blocks_for(n), 256, 0, stream_>>>(s.seed, s.rate, dims_of(s.local_shape), dims_of(s.origin),
                                                       dims_of(s.global_shape), x, y, n, false);
}

void CudaBackend::dropout_backward(const DropoutSpec& s, const float* dy, float* dx) {
  const long long n = count(s.local_shape);
  if (n > 0)
    dropout_kernel<<<blocks_for(n), 256, 0, stream_>>>(s.seed, s.rate, dims_of(s.local_shape), dims_of(s.origin),
                                                       dims_of(s.global_shape), dy, dx, n, true);
}

void CudaBackend::softmax(const float* x, float* y, i64 outer, i64 axis, i64 inner) {
  if (outer * inner > 0) softmax_kernel<<<blocks_for(outer * inner), 256, 0, stream_>>>(x, y, outer, axis, inner);
}

void CudaBackend::softmax_backward(const float* y, const float* dy, float* dx, i64 outer, i64 axis, i64 inner) {
  if (outer * inner > 0)
    softmax_backward_kernel<<<blocks_for(outer * inner), 256, 0, stream_>>>(y, dy, dx, outer, axis, inner);
}

void CudaBackend::reduce_sum(const float* x, float* y, const std::vector<i64>& in_shape,
                             const std::vector<i64>& out_shape, float scale) {
  fill_zero(y, static_cast<std::size_t>(count(out_shape)) * sizeof(float));
  const long long n = count(in_shape);
  if (n > 0) reduce_kernel<<<blocks_for(n), 256, 0, stream_>>>(x, y, dims_of(in_shape), dims_of(out_shape), scale, n);
}

void CudaBackend::reduce_sum_backward(const float* dy, float* dx, const std::vector<i64>& in_shape,
                                      const std::vector<i64>& out_shape, float scale) {
  const long long n = count(in_shape);
  if (n > 0)
    reduce_backward_kernel<<<blocks_for(n), 256, 0, stream_>>>(dy, dx, dims_of(in_shape), dims_of(out_shape), scale, n);
}

void CudaBackend::transpose(const void* x, void* y, const std::vector<i64>& x_shape, const std::vector<i64>& perm,
                            int elem_size, bool add) {
  const long long n = count(x_shape);
  if (n <= 0) return;
  if (elem_size == 8)
    transpose_kernel<long long><<<blocks_for(n), 256, 0, stream_>>>(static_cast<const long long*>(x),
                                                                    static_cast<long long*>(y), dims_of(x_shape),
                                                                    dims_of(perm), n, false);
  else
    transpose_kernel<float><<<blocks_for(n), 256, 0, stream_>>>(static_cast<const float*>(x), static_cast<float*>(y),
                                                                dims_of(x_shape), dims_of(perm), n, add);
}

}  // namespace unity::executor::cuda
