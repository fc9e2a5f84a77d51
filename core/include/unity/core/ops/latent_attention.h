#pragma once
// The arithmetic of the LatentAttention operator (DeepSeek-V2/V3's multi-head latent attention),
// shared by the executor's host kernel and the rule evaluator, in float or double.
//
// x [B, S, E]. Queries through a compressed latent (q_lora > 0) or straight from x (q_lora 0,
// DeepSeek-V2-Lite):
//   c_q = rms(x w_dq) * q_norm [q_lora],    q = c_q w_uq  [heads x (nope + rope)]   (or q = x w_uq)
// Keys and values through one compressed latent, plus one rotary key shared by every head:
//   [c_kv | k_pe] = x w_dkv [kv_lora + rope],  kv = (rms(c_kv) * kv_norm) w_ukv [heads x (nope +
//   v)]
// Each head's query is its nope part and its rope part (rotated by the position), its key its nope
// part of kv and the shared k_pe (rotated), its value the v part of kv (decoupled RoPE):
//   scores = (q_nope . k_nope + q_pe . k_pe) / sqrt(nope + rope), causal if set,
//   context = softmax(scores) v [heads x v],   y = context w_o [E].
// Per head the columns are laid out head by head, nope before rope in w_uq and nope before v in
// w_ukv, as DeepSeek's checkpoints are. The rotation is the half-split form MultiHeadAttention's
// rotary uses (element i of each half by position / base^(2i / rope)); rms is RMSNorm with epsilon
// 1e-6 (DeepSeek's rms_norm_eps). A task holding a block of the heads (w_uq and w_ukv columns, w_o
// rows) runs the whole down projections and norms and leaves a partial sum of y; the gradients of
// the down projections, the norms and x are then partial sums too (Megatron-Core's MLA tensor
// parallelism).
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "unity/core/pcg/operator.h"

namespace unity::latent_attention {

struct Dims {
  std::int64_t batch = 0, seq = 0, hidden = 0;
  std::int64_t heads = 0;   // the heads this task holds
  std::int64_t q_lora = 0;  // 0: queries straight from x
  std::int64_t kv_lora = 0, nope = 0, rope = 0, v = 0;
  bool causal = false;
  double rotary_base = 10000;
  double epsilon = 1e-6;
  std::int64_t qk() const { return nope + rope; }
};

// The inputs in one order whatever the query path: x, w_dq, q_norm, w_uq, w_dkv, kv_norm, w_ukv,
// w_o. Without query compression the operator has 6 inputs (no w_dq, no q_norm).
enum Slot { kX, kWdq, kQnorm, kWuq, kWdkv, kKvNorm, kWukv, kWo, kSlots };

// The operator input that holds canonical slot `s` (-1: none) for a node of `inputs` inputs.
inline int input_of(int s, std::size_t inputs) {
  if (inputs == 8) return s;
  if (s == kWdq || s == kQnorm) return -1;
  return s == kX ? 0 : s - 2;
}

// Dims from the node's attributes and its (local) sizes of x, w_uq and w_dkv.
inline Dims make_dims(const Operator& op, std::size_t inputs, const std::vector<std::int64_t>& x,
                      const std::vector<std::int64_t>& w_uq,
                      const std::vector<std::int64_t>& w_dkv) {
  Dims d;
  d.batch = x.at(0);
  d.seq = x.at(1);
  d.hidden = x.at(2);
  d.nope = op.attrs.get_int("qk_nope_head_dim");
  d.rope = op.attrs.get_int("qk_rope_head_dim");
  d.v = op.attrs.get_int("v_head_dim");
  d.heads = w_uq.at(1) / d.qk();
  d.q_lora = inputs == 8 ? w_uq.at(0) : 0;
  d.kv_lora = w_dkv.at(1) - d.rope;
  d.causal = op.attrs.get_int("causal", 0) != 0;
  d.rotary_base = op.attrs.get_double("rotary_base", 10000.0);
  return d;
}

template <typename T>
struct Inputs {
  const T* at[kSlots] = {};  // null where the node has no such input
};

template <typename T>
struct Gradients {
  T* at[kSlots] = {};  // null: not wanted
};

namespace detail {

// c (+)= a [m, k] b [k, n]
template <typename T>
void matmul(const T* a, const T* b, T* c, std::int64_t m, std::int64_t k, std::int64_t n,
            bool accumulate) {
  if (!accumulate)
    for (std::int64_t i = 0; i < m * n; ++i) c[i] = T(0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) {
      const T av = a[i * k + p];
      for (std::int64_t j = 0; j < n; ++j) c[i * n + j] += av * b[p * n + j];
    }
}

// c += a^T b: a [m, k], b [m, n], c [k, n] (a weight's gradient)
template <typename T>
void matmul_tn(const T* a, const T* b, T* c, std::int64_t m, std::int64_t k, std::int64_t n) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) {
      const T av = a[i * k + p];
      for (std::int64_t j = 0; j < n; ++j) c[p * n + j] += av * b[i * n + j];
    }
}

// c += a b^T: a [m, n], b [k, n], c [m, k] (an input's gradient)
template <typename T>
void matmul_nt(const T* a, const T* b, T* c, std::int64_t m, std::int64_t n, std::int64_t k) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) {
      T s = T(0);
      for (std::int64_t j = 0; j < n; ++j) s += a[i * n + j] * b[p * n + j];
      c[i * k + p] += s;
    }
}

// Rotates `width` elements at x (stride 1) for position `pos`; `back` applies the transpose.
template <typename T>
void rotate(T* x, std::int64_t width, std::int64_t pos, double base, bool back) {
  const std::int64_t half = width / 2;
  for (std::int64_t i = 0; i < half; ++i) {
    const double angle = static_cast<double>(pos) *
                         std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(width));
    const T c = static_cast<T>(std::cos(angle));
    const T s = static_cast<T>(back ? -std::sin(angle) : std::sin(angle));
    const T a = x[i], b = x[i + half];
    x[i] = a * c - b * s;
    x[i + half] = b * c + a * s;
  }
}

// The forward pass of one sample, everything the backward pass needs kept.
template <typename T>
struct Sample {
  std::vector<T> cq, rq, cqn;   // [S, q_lora], [S], [S, q_lora]
  std::vector<T> q;             // [S, heads x qk], the rope parts rotated
  std::vector<T> ckv, rkv, cn;  // [S, kv_lora + rope] (k_pe rotated), [S], [S, kv_lora]
  std::vector<T> kv;            // [S, heads x (nope + v)]
  std::vector<T> p;             // [heads, S, S] probabilities
  std::vector<T> ctx;           // [S, heads x v]
};

template <typename T>
void rms_forward(const T* c, const T* gamma, T* r, T* y, std::int64_t rows, std::int64_t n,
                 std::int64_t stride, double eps) {
  for (std::int64_t s = 0; s < rows; ++s) {
    T sq = T(0);
    for (std::int64_t i = 0; i < n; ++i) sq += c[s * stride + i] * c[s * stride + i];
    r[s] = static_cast<T>(std::sqrt(sq / static_cast<T>(n) + static_cast<T>(eps)));
    for (std::int64_t i = 0; i < n; ++i) y[s * n + i] = c[s * stride + i] / r[s] * gamma[i];
  }
}

// Given dy of y = c / r * gamma: dc (overwritten, stride `stride`) and dgamma (+=, if not null).
template <typename T>
void rms_backward(const T* c, const T* gamma, const T* r, const T* dy, T* dc, T* dgamma,
                  std::int64_t rows, std::int64_t n, std::int64_t stride) {
  for (std::int64_t s = 0; s < rows; ++s) {
    T uc = T(0);
    for (std::int64_t i = 0; i < n; ++i) {
      const T ci = c[s * stride + i], g = dy[s * n + i];
      if (dgamma) dgamma[i] += g * ci / r[s];
      uc += g * gamma[i] * ci;
    }
    const T r3 = r[s] * r[s] * r[s];
    for (std::int64_t i = 0; i < n; ++i)
      dc[s * stride + i] =
          dy[s * n + i] * gamma[i] / r[s] - c[s * stride + i] * uc / (static_cast<T>(n) * r3);
  }
}

template <typename T>
Sample<T> forward_sample(const Dims& d, const Inputs<T>& in, const T* x) {
  const std::int64_t S = d.seq, E = d.hidden, H = d.heads, qk = d.qk();
  const std::int64_t kvw = d.kv_lora + d.rope, kvu = d.nope + d.v;
  Sample<T> f;
  const auto n = [](std::int64_t a) { return static_cast<std::size_t>(a); };
  f.q.resize(n(S * H * qk));
  if (d.q_lora > 0) {
    f.cq.resize(n(S * d.q_lora));
    f.rq.resize(n(S));
    f.cqn.resize(n(S * d.q_lora));
    matmul(x, in.at[kWdq], f.cq.data(), S, E, d.q_lora, false);
    rms_forward(f.cq.data(), in.at[kQnorm], f.rq.data(), f.cqn.data(), S, d.q_lora, d.q_lora,
                d.epsilon);
    matmul(f.cqn.data(), in.at[kWuq], f.q.data(), S, d.q_lora, H * qk, false);
  } else {
    matmul(x, in.at[kWuq], f.q.data(), S, E, H * qk, false);
  }
  f.ckv.resize(n(S * kvw));
  f.rkv.resize(n(S));
  f.cn.resize(n(S * d.kv_lora));
  matmul(x, in.at[kWdkv], f.ckv.data(), S, E, kvw, false);
  rms_forward(f.ckv.data(), in.at[kKvNorm], f.rkv.data(), f.cn.data(), S, d.kv_lora, kvw,
              d.epsilon);
  f.kv.resize(n(S * H * kvu));
  matmul(f.cn.data(), in.at[kWukv], f.kv.data(), S, d.kv_lora, H * kvu, false);
  for (std::int64_t s = 0; s < S; ++s) {
    rotate(f.ckv.data() + s * kvw + d.kv_lora, d.rope, s, d.rotary_base, false);
    for (std::int64_t h = 0; h < H; ++h)
      rotate(f.q.data() + (s * H + h) * qk + d.nope, d.rope, s, d.rotary_base, false);
  }
  const T scale = T(1) / static_cast<T>(std::sqrt(static_cast<double>(qk)));
  f.p.assign(n(H * S * S), T(0));
  f.ctx.assign(n(S * H * d.v), T(0));
  for (std::int64_t h = 0; h < H; ++h)
    for (std::int64_t i = 0; i < S; ++i) {
      const T* qi = f.q.data() + (i * H + h) * qk;
      T* pi = f.p.data() + (h * S + i) * S;
      const std::int64_t last = d.causal ? i + 1 : S;
      T top = -std::numeric_limits<T>::infinity();
      for (std::int64_t j = 0; j < last; ++j) {
        const T* kj = f.kv.data() + (j * H + h) * kvu;
        const T* pe = f.ckv.data() + j * kvw + d.kv_lora;
        T s = T(0);
        for (std::int64_t t = 0; t < d.nope; ++t) s += qi[t] * kj[t];
        for (std::int64_t t = 0; t < d.rope; ++t) s += qi[d.nope + t] * pe[t];
        pi[j] = s * scale;
        if (pi[j] > top) top = pi[j];
      }
      T sum = T(0);
      for (std::int64_t j = 0; j < last; ++j) sum += pi[j] = std::exp(pi[j] - top);
      T* ci = f.ctx.data() + (i * H + h) * d.v;
      for (std::int64_t j = 0; j < last; ++j) {
        pi[j] /= sum;
        const T* vj = f.kv.data() + (j * H + h) * kvu + d.nope;
        for (std::int64_t t = 0; t < d.v; ++t) ci[t] += pi[j] * vj[t];
      }
    }
  return f;
}

}  // namespace detail

// y [B, S, E] (overwritten).
template <typename T>
void forward(const Dims& d, const Inputs<T>& in, T* y) {
  const std::int64_t S = d.seq, E = d.hidden;
  for (std::int64_t b = 0; b < d.batch; ++b) {
    const auto f = detail::forward_sample(d, in, in.at[kX] + b * S * E);
    detail::matmul(f.ctx.data(), in.at[kWo], y + b * S * E, S, d.heads * d.v, E, false);
  }
}

// Accumulates (+=) the gradients whose pointer is not null, given dy [B, S, E].
template <typename T>
void backward(const Dims& d, const Inputs<T>& in, const T* dy, const Gradients<T>& grad) {
  const std::int64_t S = d.seq, E = d.hidden, H = d.heads, qk = d.qk();
  const std::int64_t kvw = d.kv_lora + d.rope, kvu = d.nope + d.v;
  const auto n = [](std::int64_t a) { return static_cast<std::size_t>(a); };
  const T scale = T(1) / static_cast<T>(std::sqrt(static_cast<double>(qk)));
  for (std::int64_t b = 0; b < d.batch; ++b) {
    const T* x = in.at[kX] + b * S * E;
    const T* dyb = dy + b * S * E;
    const auto f = detail::forward_sample(d, in, x);
    if (grad.at[kWo]) detail::matmul_tn(f.ctx.data(), dyb, grad.at[kWo], S, H * d.v, E);
    std::vector<T> dctx(n(S * H * d.v), T(0));
    detail::matmul_nt(dyb, in.at[kWo], dctx.data(), S, E, H * d.v);
    std::vector<T> dq(n(S * H * qk), T(0)), dkv(n(S * H * kvu), T(0)), dckv(n(S * kvw), T(0));
    std::vector<T> dp(n(S));
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < S; ++i) {
        const std::int64_t last = d.causal ? i + 1 : S;
        const T* pi = f.p.data() + (h * S + i) * S;
        const T* dci = dctx.data() + (i * H + h) * d.v;
        T dot = T(0);
        for (std::int64_t j = 0; j < last; ++j) {
          const T* vj = f.kv.data() + (j * H + h) * kvu + d.nope;
          T* dvj = dkv.data() + (j * H + h) * kvu + d.nope;
          T s = T(0);
          for (std::int64_t t = 0; t < d.v; ++t) {
            s += dci[t] * vj[t];
            dvj[t] += pi[j] * dci[t];
          }
          dp[j] = s;
          dot += pi[j] * s;
        }
        const T* qi = f.q.data() + (i * H + h) * qk;
        T* dqi = dq.data() + (i * H + h) * qk;
        for (std::int64_t j = 0; j < last; ++j) {
          const T ds = pi[j] * (dp[j] - dot) * scale;
          const T* kj = f.kv.data() + (j * H + h) * kvu;
          T* dkj = dkv.data() + (j * H + h) * kvu;
          const T* pe = f.ckv.data() + j * kvw + d.kv_lora;
          T* dpe = dckv.data() + j * kvw + d.kv_lora;
          for (std::int64_t t = 0; t < d.nope; ++t) {
            dqi[t] += ds * kj[t];
            dkj[t] += ds * qi[t];
          }
          for (std::int64_t t = 0; t < d.rope; ++t) {
            dqi[d.nope + t] += ds * pe[t];
            dpe[t] += ds * qi[d.nope + t];
          }
        }
      }
    // The rotations' transposes take the rope parts' gradients back to the projections.
    for (std::int64_t s = 0; s < S; ++s) {
      detail::rotate(dckv.data() + s * kvw + d.kv_lora, d.rope, s, d.rotary_base, true);
      for (std::int64_t h = 0; h < H; ++h)
        detail::rotate(dq.data() + (s * H + h) * qk + d.nope, d.rope, s, d.rotary_base, true);
    }
    // Keys and values: w_ukv, then kv_norm, then w_dkv and x.
    if (grad.at[kWukv])
      detail::matmul_tn(f.cn.data(), dkv.data(), grad.at[kWukv], S, d.kv_lora, H * kvu);
    std::vector<T> dcn(n(S * d.kv_lora), T(0));
    detail::matmul_nt(dkv.data(), in.at[kWukv], dcn.data(), S, H * kvu, d.kv_lora);
    detail::rms_backward(f.ckv.data(), in.at[kKvNorm], f.rkv.data(), dcn.data(), dckv.data(),
                         grad.at[kKvNorm], S, d.kv_lora, kvw);
    if (grad.at[kWdkv]) detail::matmul_tn(x, dckv.data(), grad.at[kWdkv], S, E, kvw);
    T* dx = grad.at[kX] ? grad.at[kX] + b * S * E : nullptr;
    if (dx) detail::matmul_nt(dckv.data(), in.at[kWdkv], dx, S, kvw, E);
    // Queries: w_uq, then (compressed) q_norm and w_dq, and x.
    if (d.q_lora > 0) {
      if (grad.at[kWuq])
        detail::matmul_tn(f.cqn.data(), dq.data(), grad.at[kWuq], S, d.q_lora, H * qk);
      std::vector<T> dcqn(n(S * d.q_lora), T(0)), dcq(n(S * d.q_lora), T(0));
      detail::matmul_nt(dq.data(), in.at[kWuq], dcqn.data(), S, H * qk, d.q_lora);
      detail::rms_backward(f.cq.data(), in.at[kQnorm], f.rq.data(), dcqn.data(), dcq.data(),
                           grad.at[kQnorm], S, d.q_lora, d.q_lora);
      if (grad.at[kWdq]) detail::matmul_tn(x, dcq.data(), grad.at[kWdq], S, E, d.q_lora);
      if (dx) detail::matmul_nt(dcq.data(), in.at[kWdq], dx, S, d.q_lora, E);
    } else {
      if (grad.at[kWuq]) detail::matmul_tn(x, dq.data(), grad.at[kWuq], S, E, H * qk);
      if (dx) detail::matmul_nt(dq.data(), in.at[kWuq], dx, S, H * qk, E);
    }
  }
}

}  // namespace unity::latent_attention
