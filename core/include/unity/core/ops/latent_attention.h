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
#include <algorithm>
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

// A product C = op(A) op(B) + beta C of row-major matrices with leading dimensions (op: the
// matrix or its transpose): the kernel runs its projections and each head's scores and context
// as these. naive_gemm serves the rule evaluator (double); the executor passes BLAS's.
template <typename T>
using Gemm = void (*)(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                      const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
                      std::int64_t ldc);

template <typename T>
void naive_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
                std::int64_t ldc) {
  for (std::int64_t i = 0; i < m; ++i) {
    T* ci = c + i * ldc;
    for (std::int64_t j = 0; j < n; ++j) ci[j] = beta == T(0) ? T(0) : beta * ci[j];
    for (std::int64_t p = 0; p < k; ++p) {
      const T av = trans_a ? a[p * lda + i] : a[i * lda + p];
      if (trans_b)
        for (std::int64_t j = 0; j < n; ++j) ci[j] += av * b[j * ldb + p];
      else
        for (std::int64_t j = 0; j < n; ++j) ci[j] += av * b[p * ldb + j];
    }
  }
}

namespace detail {

// The rotation's cosines and sines by position and pair, computed once a pass: element i of each
// half by position / base^(2i / width).
template <typename T>
struct Rotary {
  std::int64_t half = 0;
  std::vector<T> cos, sin;  // [positions, half]
  Rotary(std::int64_t positions, std::int64_t width, double base) : half(width / 2) {
    cos.resize(static_cast<std::size_t>(positions * half));
    sin.resize(cos.size());
    for (std::int64_t pos = 0; pos < positions; ++pos)
      for (std::int64_t i = 0; i < half; ++i) {
        const double angle =
            static_cast<double>(pos) *
            std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(width));
        cos[static_cast<std::size_t>(pos * half + i)] = static_cast<T>(std::cos(angle));
        sin[static_cast<std::size_t>(pos * half + i)] = static_cast<T>(std::sin(angle));
      }
  }
  // Rotates the 2 x half elements at x for position `pos`; `back` applies the transpose.
  void apply(T* x, std::int64_t pos, bool back) const {
    const T* c = cos.data() + pos * half;
    const T* s = sin.data() + pos * half;
    for (std::int64_t i = 0; i < half; ++i) {
      const T si = back ? -s[i] : s[i];
      const T a = x[i], b = x[i + half];
      x[i] = a * c[i] - b * si;
      x[i + half] = b * c[i] + a * si;
    }
  }
};

// The forward pass of one sample, everything the backward pass needs kept.
template <typename T>
struct Sample {
  std::vector<T> cq, rq, cqn;   // [S, q_lora], [S], [S, q_lora]
  std::vector<T> q;             // [S, heads x qk], the rope parts rotated
  std::vector<T> ckv, rkv, cn;  // [S, kv_lora + rope] (k_pe rotated), [S], [S, kv_lora]
  std::vector<T> kv;            // [S, heads x (nope + v)]
  std::vector<T> p;             // [heads, S, S] probabilities (0 where masked)
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
Sample<T> forward_sample(const Dims& d, const Inputs<T>& in, const T* x, const Rotary<T>& rot,
                         Gemm<T> gemm) {
  const std::int64_t S = d.seq, E = d.hidden, H = d.heads, qk = d.qk();
  const std::int64_t kvw = d.kv_lora + d.rope, kvu = d.nope + d.v;
  Sample<T> f;
  const auto n = [](std::int64_t a) { return static_cast<std::size_t>(a); };
  f.q.resize(n(S * H * qk));
  if (d.q_lora > 0) {
    f.cq.resize(n(S * d.q_lora));
    f.rq.resize(n(S));
    f.cqn.resize(n(S * d.q_lora));
    gemm(false, false, S, d.q_lora, E, x, E, in.at[kWdq], d.q_lora, T(0), f.cq.data(), d.q_lora);
    rms_forward(f.cq.data(), in.at[kQnorm], f.rq.data(), f.cqn.data(), S, d.q_lora, d.q_lora,
                d.epsilon);
    gemm(false, false, S, H * qk, d.q_lora, f.cqn.data(), d.q_lora, in.at[kWuq], H * qk, T(0),
         f.q.data(), H * qk);
  } else {
    gemm(false, false, S, H * qk, E, x, E, in.at[kWuq], H * qk, T(0), f.q.data(), H * qk);
  }
  f.ckv.resize(n(S * kvw));
  f.rkv.resize(n(S));
  f.cn.resize(n(S * d.kv_lora));
  gemm(false, false, S, kvw, E, x, E, in.at[kWdkv], kvw, T(0), f.ckv.data(), kvw);
  rms_forward(f.ckv.data(), in.at[kKvNorm], f.rkv.data(), f.cn.data(), S, d.kv_lora, kvw,
              d.epsilon);
  f.kv.resize(n(S * H * kvu));
  gemm(false, false, S, H * kvu, d.kv_lora, f.cn.data(), d.kv_lora, in.at[kWukv], H * kvu, T(0),
       f.kv.data(), H * kvu);
  for (std::int64_t s = 0; s < S; ++s) {
    rot.apply(f.ckv.data() + s * kvw + d.kv_lora, s, false);
    for (std::int64_t h = 0; h < H; ++h)
      rot.apply(f.q.data() + (s * H + h) * qk + d.nope, s, false);
  }
  const T scale = T(1) / static_cast<T>(std::sqrt(static_cast<double>(qk)));
  f.p.resize(n(H * S * S));
  f.ctx.resize(n(S * H * d.v));
  const T* pe = f.ckv.data() + d.kv_lora;  // the shared rotary key, row stride kvw
  for (std::int64_t h = 0; h < H; ++h) {
    T* ph = f.p.data() + h * S * S;
    // Scores: the nope parts against each head's keys, the rope parts against the shared one.
    gemm(false, true, S, S, d.nope, f.q.data() + h * qk, H * qk, f.kv.data() + h * kvu, H * kvu,
         T(0), ph, S);
    gemm(false, true, S, S, d.rope, f.q.data() + h * qk + d.nope, H * qk, pe, kvw, T(1), ph, S);
    for (std::int64_t i = 0; i < S; ++i) {
      T* pi = ph + i * S;
      const std::int64_t last = d.causal ? i + 1 : S;
      T top = -std::numeric_limits<T>::infinity();
      for (std::int64_t j = 0; j < last; ++j) {
        pi[j] *= scale;
        if (pi[j] > top) top = pi[j];
      }
      T sum = T(0);
      for (std::int64_t j = 0; j < last; ++j) sum += pi[j] = std::exp(pi[j] - top);
      for (std::int64_t j = 0; j < last; ++j) pi[j] /= sum;
      for (std::int64_t j = last; j < S; ++j) pi[j] = T(0);
    }
    gemm(false, false, S, d.v, S, ph, S, f.kv.data() + h * kvu + d.nope, H * kvu, T(0),
         f.ctx.data() + h * d.v, H * d.v);
  }
  return f;
}

}  // namespace detail

// A forward pass's samples, kept for the backward pass instead of running them again.
template <typename T>
struct Kept {
  std::vector<detail::Sample<T>> samples;
};

// y [B, S, E] (overwritten); the samples' results into `keep` where given.
template <typename T>
void forward(const Dims& d, const Inputs<T>& in, T* y, Gemm<T> gemm = naive_gemm<T>,
             Kept<T>* keep = nullptr) {
  const std::int64_t S = d.seq, E = d.hidden;
  const detail::Rotary<T> rot(S, d.rope, d.rotary_base);
  if (keep) keep->samples.clear();
  for (std::int64_t b = 0; b < d.batch; ++b) {
    auto f = detail::forward_sample(d, in, in.at[kX] + b * S * E, rot, gemm);
    gemm(false, false, S, E, d.heads * d.v, f.ctx.data(), d.heads * d.v, in.at[kWo], E, T(0),
         y + b * S * E, E);
    if (keep) keep->samples.push_back(std::move(f));
  }
}

// Accumulates (+=) the gradients whose pointer is not null, given dy [B, S, E]. The forward pass
// runs again for each sample unless `kept` holds them all.
template <typename T>
void backward(const Dims& d, const Inputs<T>& in, const T* dy, const Gradients<T>& grad,
              Gemm<T> gemm = naive_gemm<T>, const Kept<T>* kept = nullptr) {
  const std::int64_t S = d.seq, E = d.hidden, H = d.heads, qk = d.qk();
  const std::int64_t kvw = d.kv_lora + d.rope, kvu = d.nope + d.v;
  const auto n = [](std::int64_t a) { return static_cast<std::size_t>(a); };
  const T scale = T(1) / static_cast<T>(std::sqrt(static_cast<double>(qk)));
  const detail::Rotary<T> rot(S, d.rope, d.rotary_base);
  const bool use_kept = kept && static_cast<std::int64_t>(kept->samples.size()) == d.batch;
  std::vector<T> dctx(n(S * H * d.v)), dq(n(S * H * qk)), dkv(n(S * H * kvu)), dckv(n(S * kvw));
  std::vector<T> dp(n(S * S)), dcn(n(S * d.kv_lora));
  for (std::int64_t b = 0; b < d.batch; ++b) {
    const T* x = in.at[kX] + b * S * E;
    const T* dyb = dy + b * S * E;
    detail::Sample<T> recomputed;
    if (!use_kept) recomputed = detail::forward_sample(d, in, x, rot, gemm);
    const detail::Sample<T>& f = use_kept ? kept->samples[n(b)] : recomputed;
    if (grad.at[kWo])
      gemm(true, false, H * d.v, E, S, f.ctx.data(), H * d.v, dyb, E, T(1), grad.at[kWo], E);
    gemm(false, true, S, H * d.v, E, dyb, E, in.at[kWo], E, T(0), dctx.data(), H * d.v);
    std::fill(dq.begin(), dq.end(), T(0));
    std::fill(dkv.begin(), dkv.end(), T(0));
    std::fill(dckv.begin(), dckv.end(), T(0));
    const T* pe = f.ckv.data() + d.kv_lora;
    T* dpe = dckv.data() + d.kv_lora;
    for (std::int64_t h = 0; h < H; ++h) {
      const T* ph = f.p.data() + h * S * S;
      const T* dch = dctx.data() + h * d.v;
      // dP = dctx v^T; dv += P^T dctx; dS = P (dP - rowsum(P dP)) scale (0 where masked).
      gemm(false, true, S, S, d.v, dch, H * d.v, f.kv.data() + h * kvu + d.nope, H * kvu, T(0),
           dp.data(), S);
      gemm(true, false, S, d.v, S, ph, S, dch, H * d.v, T(1), dkv.data() + h * kvu + d.nope,
           H * kvu);
      for (std::int64_t i = 0; i < S; ++i) {
        const T* pi = ph + i * S;
        T* di = dp.data() + i * S;
        T dot = T(0);
        for (std::int64_t j = 0; j < S; ++j) dot += pi[j] * di[j];
        for (std::int64_t j = 0; j < S; ++j) di[j] = pi[j] * (di[j] - dot) * scale;
      }
      const T* ds = dp.data();
      gemm(false, false, S, d.nope, S, ds, S, f.kv.data() + h * kvu, H * kvu, T(1),
           dq.data() + h * qk, H * qk);
      gemm(false, false, S, d.rope, S, ds, S, pe, kvw, T(1), dq.data() + h * qk + d.nope, H * qk);
      gemm(true, false, S, d.nope, S, ds, S, f.q.data() + h * qk, H * qk, T(1),
           dkv.data() + h * kvu, H * kvu);
      gemm(true, false, S, d.rope, S, ds, S, f.q.data() + h * qk + d.nope, H * qk, T(1), dpe, kvw);
    }
    // The rotations' transposes take the rope parts' gradients back to the projections.
    for (std::int64_t s = 0; s < S; ++s) {
      rot.apply(dckv.data() + s * kvw + d.kv_lora, s, true);
      for (std::int64_t h = 0; h < H; ++h)
        rot.apply(dq.data() + (s * H + h) * qk + d.nope, s, true);
    }
    // Keys and values: w_ukv, then kv_norm, then w_dkv and x.
    if (grad.at[kWukv])
      gemm(true, false, d.kv_lora, H * kvu, S, f.cn.data(), d.kv_lora, dkv.data(), H * kvu, T(1),
           grad.at[kWukv], H * kvu);
    gemm(false, true, S, d.kv_lora, H * kvu, dkv.data(), H * kvu, in.at[kWukv], H * kvu, T(0),
         dcn.data(), d.kv_lora);
    detail::rms_backward(f.ckv.data(), in.at[kKvNorm], f.rkv.data(), dcn.data(), dckv.data(),
                         grad.at[kKvNorm], S, d.kv_lora, kvw);
    if (grad.at[kWdkv])
      gemm(true, false, E, kvw, S, x, E, dckv.data(), kvw, T(1), grad.at[kWdkv], kvw);
    T* dx = grad.at[kX] ? grad.at[kX] + b * S * E : nullptr;
    if (dx) gemm(false, true, S, E, kvw, dckv.data(), kvw, in.at[kWdkv], kvw, T(1), dx, E);
    // Queries: w_uq, then (compressed) q_norm and w_dq, and x.
    if (d.q_lora > 0) {
      if (grad.at[kWuq])
        gemm(true, false, d.q_lora, H * qk, S, f.cqn.data(), d.q_lora, dq.data(), H * qk, T(1),
             grad.at[kWuq], H * qk);
      std::vector<T> dcqn(n(S * d.q_lora)), dcq(n(S * d.q_lora));
      gemm(false, true, S, d.q_lora, H * qk, dq.data(), H * qk, in.at[kWuq], H * qk, T(0),
           dcqn.data(), d.q_lora);
      detail::rms_backward(f.cq.data(), in.at[kQnorm], f.rq.data(), dcqn.data(), dcq.data(),
                           grad.at[kQnorm], S, d.q_lora, d.q_lora);
      if (grad.at[kWdq])
        gemm(true, false, E, d.q_lora, S, x, E, dcq.data(), d.q_lora, T(1), grad.at[kWdq],
             d.q_lora);
      if (dx)
        gemm(false, true, S, E, d.q_lora, dcq.data(), d.q_lora, in.at[kWdq], d.q_lora, T(1), dx, E);
    } else {
      if (grad.at[kWuq])
        gemm(true, false, E, H * qk, S, x, E, dq.data(), H * qk, T(1), grad.at[kWuq], H * qk);
      if (dx) gemm(false, true, S, E, H * qk, dq.data(), H * qk, in.at[kWuq], H * qk, T(1), dx, E);
    }
  }
}

}  // namespace unity::latent_attention
