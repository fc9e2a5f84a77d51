// Dense kernels: matrix products, convolution (1 to 3 spatial dims), transposed convolution, pooling, normalisation, attention, embeddings.
#include <array>
#include <cmath>
#include <limits>

#include "kernels.h"

namespace unity::rules::kernels {

DenseTensor matmul(const DenseTensor& a, const DenseTensor& b, Range k_range) {
  const int ra = a.rank(), rb = b.rank();
  const bool shared = rb == 2;
  const std::int64_t m = a.sizes[ra - 2], n = b.sizes[rb - 1];
  auto sizes = a.sizes;
  sizes[ra - 1] = n;
  DenseTensor out(sizes);
  std::int64_t batches = 1;
  for (int i = 0; i < ra - 2; ++i) batches *= a.sizes[i];
  const std::int64_t k = a.sizes[ra - 1];
  for (std::int64_t bt = 0; bt < batches; ++bt) {
    const double* pa = a.data.data() + bt * m * k;
    const double* pb = b.data.data() + (shared ? 0 : bt * k * n);
    double* po = out.data.data() + bt * m * n;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::int64_t q = k_range.first; q < k_range.second; ++q) s += pa[i * k + q] * pb[q * n + j];
        po[i * n + j] = s;
      }
  }
  return out;
}

namespace {

// A tensor's spatial dims (2...) widened to three by leading 1s, and a window list likewise.
std::array<std::int64_t, 3> spatial3(const std::vector<std::int64_t>& sizes) {
  std::array<std::int64_t, 3> s{1, 1, 1};
  const std::size_t r = sizes.size() - 2;
  for (std::size_t i = 0; i < r; ++i) s[3 - r + i] = sizes[2 + i];
  return s;
}

std::array<std::int64_t, 3> widen(const std::vector<std::int64_t>& v, std::int64_t fill) {
  std::array<std::int64_t, 3> s{fill, fill, fill};
  for (std::size_t i = 0; i < v.size(); ++i) s[3 - v.size() + i] = v[i];
  return s;
}

std::vector<std::int64_t> with_spatial(std::int64_t n, std::int64_t c,
                                       const std::array<std::int64_t, 3>& s, std::size_t r) {
  std::vector<std::int64_t> out{n, c};
  for (std::size_t i = 3 - r; i < 3; ++i) out.push_back(s[i]);
  return out;
}

}  // namespace

DenseTensor conv2d(const DenseTensor& x, const DenseTensor& w, const Conv2DParams& p, Range c_range) {
  const std::size_t r = x.sizes.size() - 2;
  const std::int64_t N = x.sizes[0], C = x.sizes[1];
  const std::int64_t O = w.sizes[0], Cg = w.sizes[1];
  const auto in = spatial3(x.sizes), k = spatial3(w.sizes);
  const auto st = widen(p.stride, 1), pd = widen(p.pad, 0), dl = widen(p.dil, 1);
  std::array<std::int64_t, 3> out;
  for (int i = 0; i < 3; ++i) out[i] = (in[i] + 2 * pd[i] - dl[i] * (k[i] - 1) - 1) / st[i] + 1;
  DenseTensor y(with_spatial(N, O, out, r));
  const std::int64_t out_per_group = O / p.groups;
  const std::int64_t in_vol = in[0] * in[1] * in[2], k_vol = k[0] * k[1] * k[2];
  std::int64_t at = 0;
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t o = 0; o < O; ++o) {
      const std::int64_t g = o / out_per_group;
      for (std::int64_t od = 0; od < out[0]; ++od)
        for (std::int64_t oh = 0; oh < out[1]; ++oh)
          for (std::int64_t ow = 0; ow < out[2]; ++ow) {
            double s = 0;
            for (std::int64_t cg = 0; cg < Cg; ++cg) {
              const std::int64_t c = g * Cg + cg;
              if (p.groups == 1 && (c < c_range.first || c >= c_range.second)) continue;
              for (std::int64_t kd = 0; kd < k[0]; ++kd)
                for (std::int64_t kh = 0; kh < k[1]; ++kh)
                  for (std::int64_t kw = 0; kw < k[2]; ++kw) {
                    const std::int64_t id = od * st[0] - pd[0] + kd * dl[0];
                    const std::int64_t ih = oh * st[1] - pd[1] + kh * dl[1];
                    const std::int64_t iw = ow * st[2] - pd[2] + kw * dl[2];
                    if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1] || iw < 0 || iw >= in[2])
                      continue;
                    s += x.data[(n * C + c) * in_vol + (id * in[1] + ih) * in[2] + iw] *
                         w.data[(o * Cg + cg) * k_vol + (kd * k[1] + kh) * k[2] + kw];
                  }
            }
            y.data[at++] = s;
          }
    }
  return y;
}

DenseTensor conv_transpose(const DenseTensor& x, const DenseTensor& w, const Conv2DParams& p,
                           const std::vector<std::int64_t>& out_pad, Range c_range) {
  const std::size_t r = x.sizes.size() - 2;
  const std::int64_t N = x.sizes[0], C = x.sizes[1];
  const std::int64_t Og = w.sizes[1], O = Og * p.groups, Cg = C / p.groups;
  const auto in = spatial3(x.sizes), k = spatial3(w.sizes);
  const auto st = widen(p.stride, 1), pd = widen(p.pad, 0), dl = widen(p.dil, 1),
             op = widen(out_pad, 0);
  std::array<std::int64_t, 3> out;
  for (int i = 0; i < 3; ++i)
    out[i] = st[i] * (in[i] - 1) + dl[i] * (k[i] - 1) + 1 - 2 * pd[i] + op[i];
  DenseTensor y(with_spatial(N, O, out, r));
  const std::int64_t in_vol = in[0] * in[1] * in[2], k_vol = k[0] * k[1] * k[2];
  const std::int64_t out_vol = out[0] * out[1] * out[2];
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c) {
      if (p.groups == 1 && (c < c_range.first || c >= c_range.second)) continue;
      const std::int64_t g = c / Cg;
      for (std::int64_t id = 0; id < in[0]; ++id)
        for (std::int64_t ih = 0; ih < in[1]; ++ih)
          for (std::int64_t iw = 0; iw < in[2]; ++iw) {
            const double v = x.data[(n * C + c) * in_vol + (id * in[1] + ih) * in[2] + iw];
            for (std::int64_t og = 0; og < Og; ++og)
              for (std::int64_t kd = 0; kd < k[0]; ++kd)
                for (std::int64_t kh = 0; kh < k[1]; ++kh)
                  for (std::int64_t kw = 0; kw < k[2]; ++kw) {
                    const std::int64_t zd = id * st[0] - pd[0] + kd * dl[0];
                    const std::int64_t zh = ih * st[1] - pd[1] + kh * dl[1];
                    const std::int64_t zw = iw * st[2] - pd[2] + kw * dl[2];
                    if (zd < 0 || zd >= out[0] || zh < 0 || zh >= out[1] || zw < 0 ||
                        zw >= out[2])
                      continue;
                    y.data[(n * O + g * Og + og) * out_vol + (zd * out[1] + zh) * out[2] + zw] +=
                        v * w.data[(c * Og + og) * k_vol + (kd * k[1] + kh) * k[2] + kw];
                  }
          }
    }
  return y;
}

DenseTensor pool2d(const DenseTensor& x, const Pool2DParams& p) {
  const std::size_t r = x.sizes.size() - 2;
  const std::int64_t N = x.sizes[0], C = x.sizes[1];
  const auto in = spatial3(x.sizes);
  const auto k = widen(p.kernel, 1), st = widen(p.stride, 1), pd = widen(p.pad, 0),
             pe = widen(p.pad_end.empty() ? p.pad : p.pad_end, 0), dl = widen(p.dil, 1);
  std::array<std::int64_t, 3> out;
  for (int i = 0; i < 3; ++i)
    out[i] = (in[i] + pd[i] + pe[i] - dl[i] * (k[i] - 1) - 1) / st[i] + 1;
  DenseTensor y(with_spatial(N, C, out, r));
  const std::int64_t in_vol = in[0] * in[1] * in[2];
  std::int64_t at = 0;
  for (std::int64_t nc = 0; nc < N * C; ++nc)
    for (std::int64_t od = 0; od < out[0]; ++od)
      for (std::int64_t oh = 0; oh < out[1]; ++oh)
        for (std::int64_t ow = 0; ow < out[2]; ++ow) {
          double acc = p.max ? -std::numeric_limits<double>::infinity() : 0.0;
          for (std::int64_t kd = 0; kd < k[0]; ++kd)
            for (std::int64_t kh = 0; kh < k[1]; ++kh)
              for (std::int64_t kw = 0; kw < k[2]; ++kw) {
                const std::int64_t id = od * st[0] - pd[0] + kd * dl[0],
                                   ih = oh * st[1] - pd[1] + kh * dl[1],
                                   iw = ow * st[2] - pd[2] + kw * dl[2];
                if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1] || iw < 0 || iw >= in[2])
                  continue;
                const double v = x.data[nc * in_vol + (id * in[1] + ih) * in[2] + iw];
                acc = p.max ? std::max(acc, v) : acc + v;
              }
          // Average pooling divides by the whole window, padding included: a linear operator.
          y.data[at++] = p.max ? acc : acc / static_cast<double>(k[0] * k[1] * k[2]);
        }
  return y;
}

DenseTensor batch_norm(const DenseTensor& x, const DenseTensor& scale, const DenseTensor& bias,
                       double epsilon, int sample_blocks) {
  const std::int64_t N = x.sizes[0], C = x.sizes[1];
  const std::int64_t spatial = x.numel() / (N * C);
  const std::int64_t per_block = N / sample_blocks;
  DenseTensor out = x;
  for (int blk = 0; blk < sample_blocks; ++blk)
    for (std::int64_t c = 0; c < C; ++c) {
      double sum = 0, sq = 0;
      const double count = static_cast<double>(per_block * spatial);
      for (std::int64_t n = blk * per_block; n < (blk + 1) * per_block; ++n)
        for (std::int64_t s = 0; s < spatial; ++s) sum += x.data[(n * C + c) * spatial + s];
      const double mean = sum / count;
      for (std::int64_t n = blk * per_block; n < (blk + 1) * per_block; ++n)
        for (std::int64_t s = 0; s < spatial; ++s) {
          const double e = x.data[(n * C + c) * spatial + s] - mean;
          sq += e * e;
        }
      const double inv = 1.0 / std::sqrt(sq / count + epsilon);
      for (std::int64_t n = blk * per_block; n < (blk + 1) * per_block; ++n)
        for (std::int64_t s = 0; s < spatial; ++s) {
          double& v = out.data[(n * C + c) * spatial + s];
          v = (v - mean) * inv * scale.data[c] + bias.data[c];
        }
    }
  return out;
}

DenseTensor layer_norm(const DenseTensor& x, int dims, const DenseTensor* gamma,
                       const DenseTensor* beta, double epsilon) {
  std::int64_t inner = 1;
  for (int d = x.rank() - dims; d < x.rank(); ++d) inner *= x.sizes[d];
  const std::int64_t outer = x.numel() / inner;
  DenseTensor out = x;
  for (std::int64_t o = 0; o < outer; ++o) {
    double sum = 0, sq = 0;
    for (std::int64_t i = 0; i < inner; ++i) sum += x.data[o * inner + i];
    const double mean = sum / static_cast<double>(inner);
    for (std::int64_t i = 0; i < inner; ++i) {
      const double e = x.data[o * inner + i] - mean;
      sq += e * e;
    }
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(inner) + epsilon);
    for (std::int64_t i = 0; i < inner; ++i) {
      double v = (x.data[o * inner + i] - mean) * inv;
      if (gamma) v = v * gamma->data[i] + beta->data[i];
      out.data[o * inner + i] = v;
    }
  }
  return out;
}

DenseTensor attention(const std::vector<const DenseTensor*>& in, std::int64_t num_heads,
                      std::int64_t head_dim, Range heads) {
  const DenseTensor &q = *in[0], &k = *in[1], &v = *in[2];
  const std::int64_t E = q.sizes[2], dh = head_dim, W = num_heads * head_dim;
  const DenseTensor Q = matmul(q, *in[3], {0, E});
  const DenseTensor K = matmul(k, *in[4], {0, E});
  const DenseTensor V = matmul(v, *in[5], {0, E});
  const DenseTensor& wo = *in[6];
  const std::int64_t N = q.sizes[0], Sq = q.sizes[1], Sk = k.sizes[1];
  DenseTensor out({N, Sq, E});
  std::vector<double> p(static_cast<std::size_t>(Sk));
  std::vector<double> head(static_cast<std::size_t>(dh));
  for (std::int64_t h = heads.first; h < heads.second; ++h)
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t i = 0; i < Sq; ++i) {
        double m = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < Sk; ++j) {
          double s = 0;
          for (std::int64_t e = 0; e < dh; ++e)
            s += Q.data[(n * Sq + i) * W + h * dh + e] * K.data[(n * Sk + j) * W + h * dh + e];
          p[j] = s / std::sqrt(static_cast<double>(dh));
          m = std::max(m, p[j]);
        }
        double sum = 0;
        for (auto& x : p) sum += (x = std::exp(x - m));
        for (std::int64_t e = 0; e < dh; ++e) {
          double s = 0;
          for (std::int64_t j = 0; j < Sk; ++j)
            s += p[j] / sum * V.data[(n * Sk + j) * W + h * dh + e];
          head[e] = s;
        }
        for (std::int64_t o = 0; o < E; ++o) {
          double s = 0;
          for (std::int64_t e = 0; e < dh; ++e) s += head[e] * wo.data[(h * dh + e) * E + o];
          out.data[(n * Sq + i) * E + o] += s;
        }
      }
  return out;
}

DenseTensor embedding(const DenseTensor& indices, const DenseTensor& table, Range rows) {
  const std::int64_t D = table.sizes[1];
  auto sizes = indices.sizes;
  sizes.push_back(D);
  DenseTensor out(sizes);
  for (std::int64_t i = 0; i < indices.numel(); ++i) {
    const auto row = static_cast<std::int64_t>(indices.data[i]);
    if (row < rows.first || row >= rows.second || row >= table.sizes[0]) continue;
    for (std::int64_t d = 0; d < D; ++d) out.data[i * D + d] = table.data[row * D + d];
  }
  return out;
}

DenseTensor embedding_bag(const DenseTensor& indices, const DenseTensor& table, bool mean,
                          Range rows) {
  const std::int64_t N = indices.sizes[0], bag = indices.sizes[1], D = table.sizes[1];
  DenseTensor out({N, D});
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t b = 0; b < bag; ++b) {
      const auto row = static_cast<std::int64_t>(indices.data[n * bag + b]);
      if (row < rows.first || row >= rows.second || row >= table.sizes[0]) continue;
      for (std::int64_t d = 0; d < D; ++d)
        out.data[n * D + d] += table.data[row * D + d] / (mean ? static_cast<double>(bag) : 1.0);
    }
  return out;
}

}  // namespace unity::rules::kernels
