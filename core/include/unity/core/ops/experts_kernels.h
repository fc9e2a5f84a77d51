#pragma once
// The arithmetic of the Experts operator (a mixture-of-experts layer's experts, all of one FFN
// shape), shared by the executor's host kernel and the rule evaluator, in float or double.
//
// x [T, H] (tokens flattened), gates [T, E] (a token's weight for each expert: zero where the
// router did not pick it), w1 [E, H, F], w2 [E, F, H], and for the gated form w3 [E, H, F]:
//   y[t] = sum over e with gates[t, e] != 0 of gates[t, e] * (act(x[t] w1[e]) (* x[t] w3[e])) w2[e]
// with act SiLU for SwiGLU (gated) and GELU (erf form) otherwise. Only the picked experts run, as
// a dropless grouped GEMM does: an unpicked expert's gate gets no gradient either, so the result
// is the router's top-k, not a dense mixture. A block of experts or of the FFN width gives partial
// sums of y (what expert and expert-tensor parallelism leave for a Reduce).
#include <cmath>
#include <cstdint>
#include <vector>

namespace unity::experts_kernels {

struct ExpertsDims {
  std::int64_t tokens = 0, hidden = 0, experts = 0, ffn = 0;
  bool gated = true;  // SwiGLU (w3 present); else GELU
};

template <typename T>
T silu(T a) {
  return a / (T(1) + std::exp(-a));
}

template <typename T>
T silu_derivative(T a) {
  const T s = T(1) / (T(1) + std::exp(-a));
  return s * (T(1) + a * (T(1) - s));
}

template <typename T>
T gelu(T a) {
  return T(0.5) * a * (T(1) + std::erf(a / std::sqrt(T(2))));
}

template <typename T>
T gelu_derivative(T a) {
  const T pi = T(3.14159265358979323846);
  return T(0.5) * (T(1) + std::erf(a / std::sqrt(T(2)))) +
         a * std::exp(-a * a / T(2)) / std::sqrt(T(2) * pi);
}

// y (overwritten) = the experts' weighted outputs.
template <typename T>
void forward(const ExpertsDims& d, const T* x, const T* gates, const T* w1, const T* w2,
             const T* w3, T* y) {
  const std::int64_t H = d.hidden, F = d.ffn, E = d.experts;
  std::vector<T> a(static_cast<std::size_t>(F)), h(static_cast<std::size_t>(F));
  for (std::int64_t i = 0; i < d.tokens * H; ++i) y[i] = T(0);
  for (std::int64_t t = 0; t < d.tokens; ++t) {
    const T* xt = x + t * H;
    for (std::int64_t e = 0; e < E; ++e) {
      const T g = gates[t * E + e];
      if (g == T(0)) continue;
      const T* w1e = w1 + e * H * F;
      for (std::int64_t f = 0; f < F; ++f) a[f] = T(0);
      for (std::int64_t k = 0; k < H; ++k)
        for (std::int64_t f = 0; f < F; ++f) a[f] += xt[k] * w1e[k * F + f];
      if (d.gated) {
        const T* w3e = w3 + e * H * F;
        for (std::int64_t f = 0; f < F; ++f) h[f] = T(0);
        for (std::int64_t k = 0; k < H; ++k)
          for (std::int64_t f = 0; f < F; ++f) h[f] += xt[k] * w3e[k * F + f];
        for (std::int64_t f = 0; f < F; ++f) h[f] *= silu(a[f]);
      } else {
        for (std::int64_t f = 0; f < F; ++f) h[f] = gelu(a[f]);
      }
      const T* w2e = w2 + e * F * H;
      T* yt = y + t * H;
      for (std::int64_t f = 0; f < F; ++f) {
        const T hf = g * h[f];
        for (std::int64_t k = 0; k < H; ++k) yt[k] += hf * w2e[f * H + k];
      }
    }
  }
}

// Accumulates (+=) the gradients of the inputs whose pointer is not null, given dy.
template <typename T>
void backward(const ExpertsDims& d, const T* x, const T* gates, const T* w1, const T* w2,
              const T* w3, const T* dy, T* dx, T* dgates, T* dw1, T* dw2, T* dw3) {
  const std::int64_t H = d.hidden, F = d.ffn, E = d.experts;
  const auto n = static_cast<std::size_t>(F);
  std::vector<T> a(n), b(n), h(n), dh(n), da(n), db(n);
  for (std::int64_t t = 0; t < d.tokens; ++t) {
    const T* xt = x + t * H;
    const T* dyt = dy + t * H;
    for (std::int64_t e = 0; e < E; ++e) {
      const T g = gates[t * E + e];
      if (g == T(0)) continue;
      const T* w1e = w1 + e * H * F;
      const T* w2e = w2 + e * F * H;
      const T* w3e = d.gated ? w3 + e * H * F : nullptr;
      for (std::size_t f = 0; f < n; ++f) a[f] = b[f] = T(0);
      for (std::int64_t k = 0; k < H; ++k)
        for (std::int64_t f = 0; f < F; ++f) {
          a[f] += xt[k] * w1e[k * F + f];
          if (w3e) b[f] += xt[k] * w3e[k * F + f];
        }
      for (std::int64_t f = 0; f < F; ++f) h[f] = w3e ? silu(a[f]) * b[f] : gelu(a[f]);
      // d(gate) = expert output . dy; d(h) = g * w2 dy.
      T dg = T(0);
      for (std::int64_t f = 0; f < F; ++f) {
        T s = T(0);
        for (std::int64_t k = 0; k < H; ++k) s += w2e[f * H + k] * dyt[k];
        dg += h[f] * s;
        dh[f] = g * s;
      }
      if (dgates) dgates[t * E + e] += dg;
      if (dw2)
        for (std::int64_t f = 0; f < F; ++f)
          for (std::int64_t k = 0; k < H; ++k) dw2[e * F * H + f * H + k] += g * h[f] * dyt[k];
      for (std::int64_t f = 0; f < F; ++f) {
        if (w3e) {
          da[f] = dh[f] * b[f] * silu_derivative(a[f]);
          db[f] = dh[f] * silu(a[f]);
        } else {
          da[f] = dh[f] * gelu_derivative(a[f]);
          db[f] = T(0);
        }
      }
      for (std::int64_t k = 0; k < H; ++k)
        for (std::int64_t f = 0; f < F; ++f) {
          if (dw1) dw1[e * H * F + k * F + f] += xt[k] * da[f];
          if (w3e && dw3) dw3[e * H * F + k * F + f] += xt[k] * db[f];
        }
      if (dx)
        for (std::int64_t k = 0; k < H; ++k) {
          T s = T(0);
          for (std::int64_t f = 0; f < F; ++f) {
            s += w1e[k * F + f] * da[f];
            if (w3e) s += w3e[k * F + f] * db[f];
          }
          dx[t * H + k] += s;
        }
    }
  }
}

}  // namespace unity::experts_kernels
