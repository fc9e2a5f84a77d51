// Element-wise, broadcasting, softmax, reduction and transpose kernels of the CPU backend.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>

#include "cpu_backend.h"
#include "lane_sum.h"
#include "unity/core/ops/random_values.h"

namespace unity::executor::cpu {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;
constexpr float kTwoOverSqrtPi = 1.12837916709551257f;

// y = f(x) element-wise. `__restrict` (or the in-place loop) lets the compiler vectorise: without
// it the possibility that y overlaps x forces scalar code.
template <typename F>
void map(const float* x, float* y, i64 n, F f) {
  if (x == y) {
    for (i64 i = 0; i < n; ++i) y[i] = f(y[i]);
    return;
  }
  const float* __restrict in = x;
  float* __restrict out = y;
  for (i64 i = 0; i < n; ++i) out[i] = f(in[i]);
}

// dx += dy * g(x, y), element-wise (the gradient of a unary operator).
template <typename G>
void map_backward(const float* x, const float* y, const float* dy, float* dx, i64 n, G g) {
  const float* __restrict xs = x;
  const float* __restrict ys = y;
  const float* __restrict gs = dy;
  float* __restrict out = dx;
  for (i64 i = 0; i < n; ++i) out[i] += g(xs ? xs[i] : 0.0f, ys ? ys[i] : 0.0f, gs[i]);
}

// Iterates the output index space of a broadcast; calls f(out_index, a_index, b_index).
template <typename F>
void for_broadcast(const BroadcastShape& s, F f) {
  const int rank = static_cast<int>(s.out.size());
  i64 total = 1;
  for (auto e : s.out) total *= e;
  if (s.a == s.out && s.b == s.out) {
    for (i64 i = 0; i < total; ++i) f(i, i, i);
    return;
  }
  const auto as = strides_of(s.a), bs = strides_of(s.b);
  std::vector<i64> a_step(rank), b_step(rank);
  for (int d = 0; d < rank; ++d) {
    a_step[d] = s.a[d] == 1 ? 0 : as[d];
    b_step[d] = s.b[d] == 1 ? 0 : bs[d];
  }
  // Innermost dim in a tight loop; outer dims by an index counter.
  const i64 inner = rank ? s.out[rank - 1] : 1;
  const i64 ai = rank ? a_step[rank - 1] : 0, bi = rank ? b_step[rank - 1] : 0;
  std::vector<i64> idx(rank, 0);
  i64 ao = 0, bo = 0;
  for (i64 base = 0; base < total; base += inner) {
    for (i64 i = 0; i < inner; ++i) f(base + i, ao + i * ai, bo + i * bi);
    for (int d = rank - 2; d >= 0; --d) {
      ++idx[d];
      ao += a_step[d];
      bo += b_step[d];
      if (idx[d] < s.out[d]) break;
      ao -= a_step[d] * idx[d];
      bo -= b_step[d] * idx[d];
      idx[d] = 0;
    }
  }
}

// The size of b where a has the output's shape and b is 1 along some leading dims (none: all
// three alike) and the output's own size along the rest: b repeats every that many output
// elements. 0 otherwise, or where the output is empty.
i64 repeated_block(const BroadcastShape& s) {
  if (s.a != s.out || s.b.size() != s.out.size()) return 0;
  std::size_t d = 0;
  while (d < s.b.size() && s.b[d] == 1) ++d;
  i64 block = 1;
  for (std::size_t e = d; e < s.b.size(); ++e) {
    if (s.b[e] != s.out[e]) return 0;
    block *= s.b[e];
  }
  return block;
}

// y = op(a, b) over n elements in contiguous rows of `block`, b the same for each row.
template <typename Op>
void repeated_rows(const float* a, const float* b, float* y, i64 n, i64 block, Op op) {
  for (i64 o = 0; o < n; o += block)
    for (i64 i = 0; i < block; ++i) y[o + i] = op(a[o + i], b[i]);
}

using random_values::mix;

}  // namespace

bool dropout_keeps(std::uint64_t seed, i64 global_index, double rate) {
  const std::uint64_t h = mix(seed ^ mix(static_cast<std::uint64_t>(global_index)));
  const double u = static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);
  return u >= rate;
}

void CpuBackend::unary(UnaryKind k, float scalar, const float* x, float* y, i64 n) {
  switch (k) {
    case UnaryKind::Identity:
      if (x != y) std::memcpy(y, x, static_cast<std::size_t>(n) * 4);
      break;
    case UnaryKind::Relu:
      map(x, y, n, [](float v) { return v > 0 ? v : 0.0f; });
      break;
    case UnaryKind::Gelu:
      map(x, y, n, [](float v) { return 0.5f * v * (1.0f + std::erf(v * kInvSqrt2)); });
      break;
    case UnaryKind::Sigmoid:
      map(x, y, n, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
      break;
    case UnaryKind::Tanh:
      map(x, y, n, [](float v) { return std::tanh(v); });
      break;
    case UnaryKind::Exp:
      map(x, y, n, [](float v) { return std::exp(v); });
      break;
    case UnaryKind::Sqrt:
      map(x, y, n, [](float v) { return std::sqrt(v); });
      break;
    case UnaryKind::Erf:
      map(x, y, n, [](float v) { return std::erf(v); });
      break;
    case UnaryKind::ScalarAdd:
      map(x, y, n, [scalar](float v) { return v + scalar; });
      break;
    case UnaryKind::ScalarMul:
      map(x, y, n, [scalar](float v) { return v * scalar; });
      break;
    case UnaryKind::Pow:
      map(x, y, n, [scalar](float v) { return std::pow(v, scalar); });
      break;
  }
}

void CpuBackend::unary_backward(UnaryKind k, float scalar, const float* x, const float* y,
                                const float* dy, float* dx, i64 n) {
  switch (k) {
    case UnaryKind::Identity:
    case UnaryKind::ScalarAdd:
      map_backward(nullptr, nullptr, dy, dx, n, [](float, float, float g) { return g; });
      break;
    case UnaryKind::Relu:
      // Branch-free: the sign of a ReLU output is data, and a mispredicted branch per element costs
      // more than the whole vectorised loop.
      map_backward(nullptr, y, dy, dx, n,
                   [](float, float v, float g) { return v > 0.0f ? g : 0.0f; });
      break;
    case UnaryKind::Gelu:
      map_backward(x, nullptr, dy, dx, n, [](float v, float, float g) {
        const float cdf = 0.5f * (1.0f + std::erf(v * kInvSqrt2));
        const float pdf = kInvSqrt2Pi * std::exp(-0.5f * v * v);
        return g * (cdf + v * pdf);
      });
      break;
    case UnaryKind::Sigmoid:
      map_backward(nullptr, y, dy, dx, n,
                   [](float, float v, float g) { return g * v * (1.0f - v); });
      break;
    case UnaryKind::Tanh:
      map_backward(nullptr, y, dy, dx, n,
                   [](float, float v, float g) { return g * (1.0f - v * v); });
      break;
    case UnaryKind::Exp:
      map_backward(nullptr, y, dy, dx, n, [](float, float v, float g) { return g * v; });
      break;
    case UnaryKind::Sqrt:
      map_backward(nullptr, y, dy, dx, n, [](float, float v, float g) { return g * 0.5f / v; });
      break;
    case UnaryKind::Erf:
      map_backward(x, nullptr, dy, dx, n,
                   [](float v, float, float g) { return g * kTwoOverSqrtPi * std::exp(-v * v); });
      break;
    case UnaryKind::ScalarMul:
      map_backward(nullptr, nullptr, dy, dx, n,
                   [scalar](float, float, float g) { return g * scalar; });
      break;
    case UnaryKind::Pow:
      map_backward(x, nullptr, dy, dx, n, [scalar](float v, float, float g) {
        return g * scalar * std::pow(v, scalar - 1.0f);
      });
      break;
  }
}

void CpuBackend::binary(BinaryKind k, const BroadcastShape& s, const float* a, const float* b,
                        float* y) {
  // All three alike, or b repeated along the output's leading dims (a rotary table over the heads,
  // a causal mask over the batch): contiguous rows of b's size, where the general walk indexes
  // every element.
  if (const i64 block = repeated_block(s); block > 0) {
    i64 n = 1;
    for (auto e : s.out) n *= e;
    switch (k) {
      case BinaryKind::Add:
        return repeated_rows(a, b, y, n, block, std::plus<float>());
      case BinaryKind::Sub:
        return repeated_rows(a, b, y, n, block, std::minus<float>());
      case BinaryKind::Mul:
        return repeated_rows(a, b, y, n, block, std::multiplies<float>());
      case BinaryKind::Div:
        return repeated_rows(a, b, y, n, block, std::divides<float>());
    }
  }
  switch (k) {
    case BinaryKind::Add:
      for_broadcast(s, [&](i64 o, i64 i, i64 j) { y[o] = a[i] + b[j]; });
      break;
    case BinaryKind::Sub:
      for_broadcast(s, [&](i64 o, i64 i, i64 j) { y[o] = a[i] - b[j]; });
      break;
    case BinaryKind::Mul:
      for_broadcast(s, [&](i64 o, i64 i, i64 j) { y[o] = a[i] * b[j]; });
      break;
    case BinaryKind::Div:
      for_broadcast(s, [&](i64 o, i64 i, i64 j) { y[o] = a[i] / b[j]; });
      break;
  }
}

void CpuBackend::binary_backward(BinaryKind k, const BroadcastShape& s, const float* a,
                                 const float* b, const float* dy, float* da, float* db) {
  switch (k) {
    case BinaryKind::Add:
      for_broadcast(s, [&](i64 o, i64 i, i64 j) {
        if (da) da[i] += dy[o];
        if (db) db[j] += dy[o];
      });
      break;
    case BinaryKind::Sub:
      for_broadcast(s, [&](i64 o, i64 i, i64 j) {
        if (da) da[i] += dy[o];
        if (db) db[j] -= dy[o];
      });
      break;
    case BinaryKind::Mul:
      for_broadcast(s, [&](i64 o, i64 i, i64 j) {
        if (da) da[i] += dy[o] * b[j];
        if (db) db[j] += dy[o] * a[i];
      });
      break;
    case BinaryKind::Div:
      for_broadcast(s, [&](i64 o, i64 i, i64 j) {
        if (da) da[i] += dy[o] / b[j];
        if (db) db[j] -= dy[o] * a[i] / (b[j] * b[j]);
      });
      break;
  }
}

void CpuBackend::dropout(const DropoutSpec& s, const float* x, float* y) {
  const float keep_scale = static_cast<float>(1.0 / (1.0 - s.rate));
  for_global(
      s, [&](i64 i, i64 g) { y[i] = dropout_keeps(s.seed, g, s.rate) ? x[i] * keep_scale : 0.0f; });
}

void CpuBackend::dropout_backward(const DropoutSpec& s, const float* dy, float* dx) {
  const float keep_scale = static_cast<float>(1.0 / (1.0 - s.rate));
  for_global(s, [&](i64 i, i64 g) {
    if (dropout_keeps(s.seed, g, s.rate)) dx[i] += dy[i] * keep_scale;
  });
}

void CpuBackend::softmax(const float* x, float* y, i64 outer, i64 axis, i64 inner) {
  for (i64 o = 0; o < outer; ++o)
    for (i64 in = 0; in < inner; ++in) {
      const float* xs = x + o * axis * inner + in;
      float* ys = y + o * axis * inner + in;
      float m = xs[0];
      for (i64 a = 1; a < axis; ++a) m = std::max(m, xs[a * inner]);
      for (i64 a = 0; a < axis; ++a) ys[a * inner] = std::exp(xs[a * inner] - m);
      const float inv = static_cast<float>(
          1.0 / lane_sum(axis, [ys, inner](i64 a) { return double{ys[a * inner]}; }));
      for (i64 a = 0; a < axis; ++a) ys[a * inner] *= inv;
    }
}

void CpuBackend::softmax_backward(const float* y, const float* dy, float* dx, i64 outer, i64 axis,
                                  i64 inner) {
  for (i64 o = 0; o < outer; ++o)
    for (i64 in = 0; in < inner; ++in) {
      const i64 base = o * axis * inner + in;
      const float dot = static_cast<float>(lane_sum(
          axis, [&](i64 a) { return double{y[base + a * inner] * dy[base + a * inner]}; }));
      for (i64 a = 0; a < axis; ++a) {
        const i64 i = base + a * inner;
        dx[i] += y[i] * (dy[i] - dot);
      }
    }
}

void CpuBackend::reduce_sum(const float* x, float* y, const std::vector<i64>& in_shape,
                            const std::vector<i64>& out_shape, float scale) {
  i64 out_total = 1;
  for (auto e : out_shape) out_total *= e;
  std::fill(y, y + out_total, 0.0f);
  BroadcastShape s{in_shape, in_shape, out_shape};  // walk x; b indexes the output
  for_broadcast(s, [&](i64 o, i64, i64 j) { y[j] += x[o]; });
  if (scale != 1.0f)
    for (i64 i = 0; i < out_total; ++i) y[i] *= scale;
}

void CpuBackend::reduce_sum_backward(const float* dy, float* dx, const std::vector<i64>& in_shape,
                                     const std::vector<i64>& out_shape, float scale) {
  BroadcastShape s{in_shape, in_shape, out_shape};
  for_broadcast(s, [&](i64 o, i64, i64 j) { dx[o] += scale * dy[j]; });
}

namespace {

// One row of a transpose: n elements `stride` apart in x to consecutive ones in y. A row that is
// contiguous in x is one memcpy; otherwise a loop on the element type (a memcpy call per element
// costs more than the copy).
template <typename T>
void copy_row(const char* in, char* out, i64 n, i64 stride) {
  const T* __restrict x = reinterpret_cast<const T*>(in);
  T* __restrict y = reinterpret_cast<T*>(out);
  for (i64 i = 0; i < n; ++i) y[i] = x[i * stride];
}

void transpose_row(const char* in, char* out, i64 n, i64 stride, int elem_size, bool add) {
  if (add) {
    const float* __restrict x = reinterpret_cast<const float*>(in);
    float* __restrict y = reinterpret_cast<float*>(out);
    for (i64 i = 0; i < n; ++i) y[i] += x[i * stride];
  } else if (stride == 1) {
    std::memcpy(out, in, static_cast<std::size_t>(n * elem_size));
  } else if (elem_size == 4) {
    copy_row<std::uint32_t>(in, out, n, stride);
  } else if (elem_size == 8) {
    copy_row<std::uint64_t>(in, out, n, stride);
  } else if (elem_size == 2) {
    copy_row<std::uint16_t>(in, out, n, stride);
  } else {
    for (i64 i = 0; i < n; ++i)
      std::memcpy(out + i * elem_size, in + i * stride * elem_size,
                  static_cast<std::size_t>(elem_size));
  }
}

}  // namespace

void CpuBackend::transpose(const void* x, void* y, const std::vector<i64>& x_shape,
                           const std::vector<i64>& perm, int elem_size, bool add) {
  const int rank = static_cast<int>(x_shape.size());
  i64 total = 1;
  for (auto e : x_shape) total *= e;
  if (total == 0) return;
  const char* in = static_cast<const char*>(x);
  char* out = static_cast<char*>(y);
  if (rank == 0) {
    transpose_row(in, out, 1, 1, elem_size, add);
    return;
  }
  const auto xs = strides_of(x_shape);
  std::vector<i64> y_shape(rank), step(rank);
  for (int d = 0; d < rank; ++d) {
    y_shape[d] = x_shape[perm[d]];
    step[d] = xs[perm[d]];  // moving along y dim d moves this far in x
  }
  // y's innermost dimension as rows; the outer dimensions by an index counter.
  const i64 row = y_shape[rank - 1];
  const i64 row_step = step[rank - 1];
  std::vector<i64> idx(rank, 0);
  i64 src = 0;
  for (i64 base = 0; base < total; base += row) {
    transpose_row(in + src * elem_size, out + base * elem_size, row, row_step, elem_size, add);
    for (int d = rank - 2; d >= 0; --d) {
      ++idx[d];
      src += step[d];
      if (idx[d] < y_shape[d]) break;
      src -= step[d] * idx[d];
      idx[d] = 0;
    }
  }
}

}  // namespace unity::executor::cpu
