// Normalisation, embedding lookups and losses on the CPU.
#include <algorithm>
#include <cmath>

#include "cpu_backend.h"
#include "lane_sum.h"

namespace unity::executor::cpu {

void CpuBackend::channel_sums(const float* x, float* sum, i64 outer, i64 channels, i64 inner) {
  for (i64 c = 0; c < channels; ++c) {
    double s = 0;
    for (i64 o = 0; o < outer; ++o) {
      const float* p = x + (o * channels + c) * inner;
      s += lane_sum(inner, [p](i64 i) { return double{p[i]}; });
    }
    sum[c] = static_cast<float>(s);
  }
}

void CpuBackend::channel_squared_deviations(const float* x, const float* mean, float* out,
                                            i64 outer, i64 channels, i64 inner) {
  for (i64 c = 0; c < channels; ++c) {
    double q = 0;
    const double m = mean[c];
    for (i64 o = 0; o < outer; ++o) {
      const float* p = x + (o * channels + c) * inner;
      q += lane_sum(inner, [p, m](i64 i) { return (p[i] - m) * (p[i] - m); });
    }
    out[c] = static_cast<float>(q);
  }
}

void CpuBackend::inverse_std(const float* squared_deviations, double count, float epsilon,
                             float* invstd, i64 channels) {
  for (i64 c = 0; c < channels; ++c)
    invstd[c] = static_cast<float>(1.0 / std::sqrt(squared_deviations[c] / count + epsilon));
}

void CpuBackend::channel_normalize(const float* x, const float* mean, const float* invstd,
                                   const float* scale, const float* shift, float* y, i64 outer,
                                   i64 channels, i64 inner) {
  for (i64 o = 0; o < outer; ++o)
    for (i64 c = 0; c < channels; ++c) {
      const float a = invstd[c] * scale[c];
      const float b = shift[c] - mean[c] * a;
      const float* p = x + (o * channels + c) * inner;
      float* q = y + (o * channels + c) * inner;
      for (i64 i = 0; i < inner; ++i) q[i] = p[i] * a + b;
    }
}

void CpuBackend::channel_backward_moments(const float* x, const float* dy, const float* mean,
                                          const float* invstd, float* sum_dy, float* sum_dy_xhat,
                                          i64 outer, i64 channels, i64 inner) {
  for (i64 c = 0; c < channels; ++c) {
    double s = 0, t = 0;
    const float m = mean[c], r = invstd[c];
    for (i64 o = 0; o < outer; ++o) {
      const float* p = x + (o * channels + c) * inner;
      const float* g = dy + (o * channels + c) * inner;
      s += lane_sum(inner, [g](i64 i) { return double{g[i]}; });
      t += lane_sum(inner,
                    [p, g, m, r](i64 i) { return static_cast<double>(g[i]) * (p[i] - m) * r; });
    }
    sum_dy[c] = static_cast<float>(s);
    sum_dy_xhat[c] = static_cast<float>(t);
  }
}

void CpuBackend::channel_normalize_backward(const float* x, const float* dy, const float* mean,
                                            const float* invstd, const float* scale,
                                            const float* sum_dy, const float* sum_dy_xhat,
                                            double count, float* dx, i64 outer, i64 channels,
                                            i64 inner) {
  for (i64 o = 0; o < outer; ++o)
    for (i64 c = 0; c < channels; ++c) {
      const float k = scale[c] * invstd[c];
      const float mdy = static_cast<float>(sum_dy[c] / count);
      const float mdyx = static_cast<float>(sum_dy_xhat[c] / count);
      const float* p = x + (o * channels + c) * inner;
      const float* g = dy + (o * channels + c) * inner;
      float* d = dx + (o * channels + c) * inner;
      for (i64 i = 0; i < inner; ++i) {
        const float xhat = (p[i] - mean[c]) * invstd[c];
        d[i] += k * (g[i] - mdy - xhat * mdyx);
      }
    }
}

void CpuBackend::layer_norm(const float* x, const float* gamma, const float* beta, float* y,
                            float* mean, float* rstd, i64 rows, i64 cols, float epsilon, bool rms) {
  for (i64 r = 0; r < rows; ++r) {
    const float* p = x + r * cols;
    const double m =
        rms ? 0.0 : lane_sum(cols, [p](i64 c) { return double{p[c]}; }) / static_cast<double>(cols);
    const double v = lane_sum(cols, [p, m](i64 c) { return (p[c] - m) * (p[c] - m); }) /
                     static_cast<double>(cols);
    const float is = static_cast<float>(1.0 / std::sqrt(v + epsilon));
    mean[r] = static_cast<float>(m);
    rstd[r] = is;
    float* q = y + r * cols;
    for (i64 c = 0; c < cols; ++c) {
      const float h = (p[c] - static_cast<float>(m)) * is;
      q[c] = gamma ? h * gamma[c] + (beta ? beta[c] : 0.0f) : h;
    }
  }
}

void CpuBackend::layer_norm_backward(const float* x, const float* gamma, const float* mean,
                                     const float* rstd, const float* dy, float* dx, float* dgamma,
                                     float* dbeta, i64 rows, i64 cols, bool rms) {
  for (i64 r = 0; r < rows; ++r) {
    const float* p = x + r * cols;
    const float* g = dy + r * cols;
    const float mr = mean[r], sr = rstd[r];
    const auto gg = [g, gamma](i64 c) { return g[c] * (gamma ? gamma[c] : 1.0f); };
    // The means of g*gamma and of g*gamma*xhat; RMSNorm subtracts no mean, so its gradient has
    // no mean-of-gradient term.
    const double a =
        rms ? 0.0
            : lane_sum(cols, [&](i64 c) { return double{gg(c)}; }) / static_cast<double>(cols);
    const double b = lane_sum(cols, [&](i64 c) { return double{gg(c) * ((p[c] - mr) * sr)}; }) /
                     static_cast<double>(cols);
    if (dgamma)
      for (i64 c = 0; c < cols; ++c) dgamma[c] += g[c] * ((p[c] - mr) * sr);
    if (dbeta)
      for (i64 c = 0; c < cols; ++c) dbeta[c] += g[c];
    if (!dx) continue;
    float* d = dx + r * cols;
    for (i64 c = 0; c < cols; ++c) {
      const float xhat = (p[c] - mr) * sr;
      d[c] += sr * (gg(c) - static_cast<float>(a) - xhat * static_cast<float>(b));
    }
  }
}

bool CpuBackend::embedding(const std::int64_t* indices, i64 count, i64 bag, bool mean,
                           const float* table, i64 row_begin, i64 rows, i64 cols, i64 num_entries,
                           float* y) {
  const float w = mean ? 1.0f / static_cast<float>(bag) : 1.0f;
  for (i64 i = 0; i < count; ++i) {
    float* out = y + i * cols;
    std::fill(out, out + cols, 0.0f);
    for (i64 j = 0; j < bag; ++j) {
      const std::int64_t id = indices[i * bag + j];
      if (id < 0 || id >= num_entries) return false;
      const i64 local = id - row_begin;
      if (local < 0 || local >= rows) continue;
      const float* src = table + local * cols;
      for (i64 c = 0; c < cols; ++c) out[c] += w * src[c];
    }
  }
  return true;
}

void CpuBackend::embedding_backward(const std::int64_t* indices, i64 count, i64 bag, bool mean,
                                    const float* dy, i64 row_begin, i64 rows, i64 cols,
                                    float* dtable) {
  const float w = mean ? 1.0f / static_cast<float>(bag) : 1.0f;
  for (i64 i = 0; i < count; ++i)
    for (i64 j = 0; j < bag; ++j) {
      const i64 local = indices[i * bag + j] - row_begin;
      if (local < 0 || local >= rows) continue;
      float* dst = dtable + local * cols;
      const float* g = dy + i * cols;
      for (i64 c = 0; c < cols; ++c) dst[c] += w * g[c];
    }
}

// One exp per logit each way (the cost model counts as many): forward in float, summed in
// double; backward the probabilities recomputed from the logits once, into a row buffer.
bool CpuBackend::softmax_cross_entropy(const float* logits, const std::int64_t* labels, float* loss,
                                       i64 rows, i64 classes) {
  for (i64 r = 0; r < rows; ++r) {
    const float* z = logits + r * classes;
    const std::int64_t label = labels[r];
    if (label < 0 || label >= classes) return false;
    float m = z[0];
    for (i64 c = 1; c < classes; ++c) m = std::max(m, z[c]);
    const double total = lane_sum(classes, [z, m](i64 c) { return double{std::exp(z[c] - m)}; });
    loss[r] = static_cast<float>(std::log(total) + m - z[label]);
  }
  return true;
}

void CpuBackend::softmax_cross_entropy_backward(const float* logits, const std::int64_t* labels,
                                                const float* dloss, float* dlogits, i64 rows,
                                                i64 classes) {
  float* e = workspace(classes);  // a row's exps
  for (i64 r = 0; r < rows; ++r) {
    const float* z = logits + r * classes;
    float* d = dlogits + r * classes;
    float m = z[0];
    for (i64 c = 1; c < classes; ++c) m = std::max(m, z[c]);
    for (i64 c = 0; c < classes; ++c) e[c] = std::exp(z[c] - m);
    const double total = lane_sum(classes, [e](i64 c) { return double{e[c]}; });
    const float g = dloss[r];
    const float inv = static_cast<float>(g / total);
    for (i64 c = 0; c < classes; ++c) d[c] += e[c] * inv;
    d[labels[r]] -= g;
  }
}

void CpuBackend::mse(const float* p, const float* t, float* loss, i64 rows, i64 cols) {
  for (i64 r = 0; r < rows; ++r) {
    const float* pr = p + r * cols;
    const float* tr = t + r * cols;
    const double s = lane_sum(cols, [pr, tr](i64 c) {
      const double d = static_cast<double>(pr[c]) - tr[c];
      return d * d;
    });
    loss[r] = static_cast<float>(s / static_cast<double>(cols));
  }
}

void CpuBackend::mse_backward(const float* p, const float* t, const float* dloss, float* dp,
                              float* dt, i64 rows, i64 cols) {
  const float k = 2.0f / static_cast<float>(cols);
  for (i64 r = 0; r < rows; ++r)
    for (i64 c = 0; c < cols; ++c) {
      const i64 i = r * cols + c;
      const float g = k * (p[i] - t[i]) * dloss[r];
      if (dp) dp[i] += g;
      if (dt) dt[i] -= g;
    }
}

}  // namespace unity::executor::cpu
