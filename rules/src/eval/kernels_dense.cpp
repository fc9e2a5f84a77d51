// Dense kernels: matrix products, convolution, pooling, normalisation, attention, embeddings.
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

DenseTensor conv2d(const DenseTensor& x, const DenseTensor& w, const Conv2DParams& p, Range c_range) {
  const std::int64_t N = x.sizes[0], C = x.sizes[1], H = x.sizes[2], W = x.sizes[3];
  const std::int64_t O = w.sizes[0], Cg = w.sizes[1], KH = w.sizes[2], KW = w.sizes[3];
  const std::int64_t OH = (H + 2 * p.pad_h - p.dil_h * (KH - 1) - 1) / p.stride_h + 1;
  const std::int64_t OW = (W + 2 * p.pad_w - p.dil_w * (KW - 1) - 1) / p.stride_w + 1;
  DenseTensor out({N, O, OH, OW});
  const std::int64_t out_per_group = O / p.groups;
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t o = 0; o < O; ++o) {
      const std::int64_t g = o / out_per_group;
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          double s = 0;
          for (std::int64_t cg = 0; cg < Cg; ++cg) {
            const std::int64_t c = g * Cg + cg;
            if (p.groups == 1 && (c < c_range.first || c >= c_range.second)) continue;
            for (std::int64_t kh = 0; kh < KH; ++kh)
              for (std::int64_t kw = 0; kw < KW; ++kw) {
                const std::int64_t ih = oh * p.stride_h - p.pad_h + kh * p.dil_h;
                const std::int64_t iw = ow * p.stride_w - p.pad_w + kw * p.dil_w;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                s += x.data[((n * C + c) * H + ih) * W + iw] * w.data[((o * Cg + cg) * KH + kh) * KW + kw];
              }
          }
          out.data[((n * O + o) * OH + oh) * OW + ow] = s;
        }
    }
  return out;
}

DenseTensor pool2d(const DenseTensor& x, const Pool2DParams& p) {
  const std::int64_t N = x.sizes[0], C = x.sizes[1], H = x.sizes[2], W = x.sizes[3];
  const std::int64_t OH = (H + 2 * p.pad_h - p.kernel_h) / p.stride_h + 1;
  const std::int64_t OW = (W + 2 * p.pad_w - p.kernel_w) / p.stride_w + 1;
  DenseTensor out({N, C, OH, OW});
  for (std::int64_t nc = 0; nc < N * C; ++nc)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        double acc = p.max ? -std::numeric_limits<double>::infinity() : 0.0;
        for (std::int64_t kh = 0; kh < p.kernel_h; ++kh)
          for (std::int64_t kw = 0; kw < p.kernel_w; ++kw) {
            const std::int64_t ih = oh * p.stride_h - p.pad_h + kh, iw = ow * p.stride_w - p.pad_w + kw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const double v = x.data[(nc * H + ih) * W + iw];
            acc = p.max ? std::max(acc, v) : acc + v;
          }
        // Average pooling divides by the whole window, padding included: a linear operator.
        out.data[(nc * OH + oh) * OW + ow] =
            p.max ? acc : acc / static_cast<double>(p.kernel_h * p.kernel_w);
      }
  return out;
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
