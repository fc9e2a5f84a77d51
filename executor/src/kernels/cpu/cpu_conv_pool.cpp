// Convolution (im2col + OpenBLAS GEMM per sample and group) and pooling on the CPU, over up to
// three spatial dims (depth, height, width; a 1-D or 2-D spec has depth and height 1). Padding may
// be asymmetric: a task computing a band of output rows reads the input rows it needs (a halo from
// its neighbours) and pads only where the band touches the edge of the whole tensor.
#include <algorithm>
#include <limits>
#include <vector>

#include "cpu_backend.h"
#include "lane_sum.h"

namespace unity::executor::cpu {
namespace {

i64 in_volume(const ConvSpec& s) { return s.d * s.h * s.w; }
i64 out_volume(const ConvSpec& s) { return s.od * s.oh * s.ow; }

// The outputs o in [0, count) whose tap start + o * stride lies inside [0, size): [lo, hi). The
// outputs before lo and from hi on read padding.
struct Inside {
  i64 lo, hi;
};

Inside inside(i64 start, i64 stride, i64 count, i64 size) {
  const i64 lo = start >= 0 ? 0 : std::min(count, (-start + stride - 1) / stride);
  const i64 hi = start > size - 1 ? 0 : std::min(count, (size - 1 - start) / stride + 1);
  return {lo, std::max(lo, hi)};
}

// Per tap column j of a convolution's or pooling's window, the outputs of a row whose tap lies
// inside the input's width: the same for every row, so found once (their divisions cost more than
// a short row's work).
template <class Spec>
std::vector<Inside> width_spans(const Spec& s) {
  std::vector<Inside> spans(static_cast<std::size_t>(s.kw));
  for (i64 j = 0; j < s.kw; ++j)
    spans[static_cast<std::size_t>(j)] = inside(j * s.dw - s.pad_left, s.sw, s.ow, s.w);
  return spans;
}

// One group of one sample: cols[(c, a, i, j), (oz, oy, ox)] for channels [c0, c0 + cg), where
// (a, i, j) is the kernel offset along depth, height and width. Each output row copies its span
// inside the input as one run and zeroes the padding around it: the per-element bounds checks of a
// plain loop made this copy, not the GEMM after it, most of a small convolution's time.
void im2col(const ConvSpec& s, const float* x, i64 cg, float* cols) {
  const i64 plane = out_volume(s);
  for (i64 c = 0; c < cg; ++c)
    for (i64 a = 0; a < s.kd; ++a)
      for (i64 i = 0; i < s.kh; ++i)
        for (i64 j = 0; j < s.kw; ++j) {
          float* row = cols + (((c * s.kd + a) * s.kh + i) * s.kw + j) * plane;
          const float* xc = x + c * in_volume(s);
          const i64 x0 = j * s.dw - s.pad_left;
          const Inside span = inside(x0, s.sw, s.ow, s.w);
          for (i64 oz = 0; oz < s.od; ++oz) {
            const i64 z = oz * s.sd - s.pad_front + a * s.dd;
            for (i64 oy = 0; oy < s.oh; ++oy) {
              const i64 y = oy * s.sh - s.pad_top + i * s.dh;
              float* out = row + (oz * s.oh + oy) * s.ow;
              if (z < 0 || z >= s.d || y < 0 || y >= s.h) {
                std::fill(out, out + s.ow, 0.0f);
                continue;
              }
              const float* xr = xc + (z * s.h + y) * s.w;
              std::fill(out, out + span.lo, 0.0f);
              if (s.sw == 1)
                std::copy(xr + x0 + span.lo, xr + x0 + span.hi, out + span.lo);
              else
                for (i64 ox = span.lo; ox < span.hi; ++ox) out[ox] = xr[x0 + ox * s.sw];
              std::fill(out + span.hi, out + s.ow, 0.0f);
            }
          }
        }
}

void col2im_add(const ConvSpec& s, const float* cols, i64 cg, float* dx) {
  const i64 plane = out_volume(s);
  for (i64 c = 0; c < cg; ++c)
    for (i64 a = 0; a < s.kd; ++a)
      for (i64 i = 0; i < s.kh; ++i)
        for (i64 j = 0; j < s.kw; ++j) {
          const float* row = cols + (((c * s.kd + a) * s.kh + i) * s.kw + j) * plane;
          float* xc = dx + c * in_volume(s);
          const i64 x0 = j * s.dw - s.pad_left;
          const Inside span = inside(x0, s.sw, s.ow, s.w);
          for (i64 oz = 0; oz < s.od; ++oz) {
            const i64 z = oz * s.sd - s.pad_front + a * s.dd;
            if (z < 0 || z >= s.d) continue;
            for (i64 oy = 0; oy < s.oh; ++oy) {
              const i64 y = oy * s.sh - s.pad_top + i * s.dh;
              if (y < 0 || y >= s.h) continue;
              float* xr = xc + (z * s.h + y) * s.w;
              const float* in = row + (oz * s.oh + oy) * s.ow;
              if (s.sw == 1)
                for (i64 ox = span.lo; ox < span.hi; ++ox) xr[x0 + ox] += in[ox];
              else
                for (i64 ox = span.lo; ox < span.hi; ++ox) xr[x0 + ox * s.sw] += in[ox];
            }
          }
        }
}

// A 1x1 convolution with stride 1 and no padding reads the input planes as they are.
bool is_pointwise(const ConvSpec& s) {
  return s.kd == 1 && s.kh == 1 && s.kw == 1 && s.sd == 1 && s.sh == 1 && s.sw == 1 &&
         s.pad_front == 0 && s.pad_back == 0 && s.pad_top == 0 && s.pad_bottom == 0 &&
         s.pad_left == 0 && s.pad_right == 0 && s.od == s.d && s.oh == s.h && s.ow == s.w;
}

// The taps of one pooling output that lie inside the input, per spatial dim: taps [k0, k1) at
// input positions start + k * dilation.
struct PoolTaps {
  i64 start, dilation, k0, k1;
  i64 at(i64 k) const { return start + k * dilation; }
  i64 count() const { return k1 - k0; }
};

PoolTaps pool_taps(i64 o, i64 stride, i64 pad, i64 kernel, i64 dilation, i64 size) {
  PoolTaps t{o * stride - pad, dilation, 0, kernel};
  if (t.start < 0) t.k0 = std::min(kernel, (-t.start + dilation - 1) / dilation);
  if (t.at(kernel - 1) >= size) t.k1 = std::max<i64>(t.k0, (size - 1 - t.start) / dilation + 1);
  if (t.start >= size) t.k1 = t.k0;
  return t;
}

// The window of one pooling output: its taps inside the input along depth, height and width.
struct PoolWindow {
  PoolTaps z, y, x;
  i64 count() const { return z.count() * y.count() * x.count(); }
};

PoolWindow pool_window(const PoolSpec& s, i64 oz, i64 oy, i64 ox) {
  return {pool_taps(oz, s.sd, s.pad_front, s.kd, s.dd, s.d),
          pool_taps(oy, s.sh, s.pad_top, s.kh, s.dh, s.h),
          pool_taps(ox, s.sw, s.pad_left, s.kw, s.dw, s.w)};
}

// What average pooling divides by: the taps inside the input, or the whole window.
i64 pool_divisor(const PoolSpec& s, const PoolWindow& w) {
  return s.count_include_pad ? s.kd * s.kh * s.kw : w.count();
}

// Calls f(input offset in the plane) for every tap of the window inside the input.
template <class F>
void for_each_tap(const PoolSpec& s, const PoolWindow& w, F&& f) {
  for (i64 kz = w.z.k0; kz < w.z.k1; ++kz)
    for (i64 ky = w.y.k0; ky < w.y.k1; ++ky)
      for (i64 kx = w.x.k0; kx < w.x.k1; ++kx)
        f((w.z.at(kz) * s.h + w.y.at(ky)) * s.w + w.x.at(kx));
}

// Max pooling a row of outputs at a time: for each tap, every output of the row that has it
// takes it or keeps its best. Each output still visits its taps in order (depth, height, width,
// the first of equal values winning), but the inner loop runs along the row, whose outputs do not
// depend on each other; one output at a time, its compare-and-select chain cost 20 times the
// pass's bytes.
void max_pool_plane(const PoolSpec& s, const std::vector<Inside>& spans, const float* xp, float* yp,
                    std::int32_t* ap) {
  std::vector<float> best(static_cast<std::size_t>(s.ow));
  for (i64 oz = 0; oz < s.od; ++oz) {
    const PoolTaps tz = pool_taps(oz, s.sd, s.pad_front, s.kd, s.dd, s.d);
    for (i64 oy = 0; oy < s.oh; ++oy) {
      const PoolTaps ty = pool_taps(oy, s.sh, s.pad_top, s.kh, s.dh, s.h);
      const i64 o = (oz * s.oh + oy) * s.ow;
      std::int32_t* at = ap + o;
      std::fill(best.begin(), best.end(), -std::numeric_limits<float>::infinity());
      std::fill(at, at + s.ow, -1);
      for (i64 kz = tz.k0; kz < tz.k1; ++kz)
        for (i64 ky = ty.k0; ky < ty.k1; ++ky) {
          const i64 row = (tz.at(kz) * s.h + ty.at(ky)) * s.w;
          for (i64 kx = 0; kx < s.kw; ++kx) {
            const i64 x0 = kx * s.dw - s.pad_left;
            const Inside span = spans[static_cast<std::size_t>(kx)];
            for (i64 ox = span.lo; ox < span.hi; ++ox) {
              const i64 tap = row + x0 + ox * s.sw;
              const float v = xp[tap];
              const bool take = v > best[static_cast<std::size_t>(ox)] || at[ox] < 0;
              best[static_cast<std::size_t>(ox)] = take ? v : best[static_cast<std::size_t>(ox)];
              at[ox] = take ? static_cast<std::int32_t>(tap) : at[ox];
            }
          }
        }
      for (i64 ox = 0; ox < s.ow; ++ox)
        yp[o + ox] = at[ox] < 0 ? 0.0f : best[static_cast<std::size_t>(ox)];
    }
  }
}

// A depthwise convolution (each group one input and one output channel, MobileNet's and
// EfficientNet's): each output plane is its input plane weighted window by window, directly.
// Through columns it took a 1-row GEMM call and a copy of the plane for every tap, channel and
// sample.
bool is_depthwise(const ConvSpec& s) { return s.groups > 1 && s.groups == s.c && s.groups == s.o; }

// Calls f(output row, input row, tap, span) for every output row of one channel and every tap
// whose depth and height land inside the input; span: the outputs of the row whose tap lies
// inside the input's width (width_spans).
template <class F>
void for_each_depthwise_row(const ConvSpec& s, F&& f) {
  const std::vector<Inside> spans = width_spans(s);
  for (i64 oz = 0; oz < s.od; ++oz)
    for (i64 a = 0; a < s.kd; ++a) {
      const i64 z = oz * s.sd - s.pad_front + a * s.dd;
      if (z < 0 || z >= s.d) continue;
      for (i64 oy = 0; oy < s.oh; ++oy)
        for (i64 i = 0; i < s.kh; ++i) {
          const i64 y = oy * s.sh - s.pad_top + i * s.dh;
          if (y < 0 || y >= s.h) continue;
          for (i64 j = 0; j < s.kw; ++j)
            f((oz * s.oh + oy) * s.ow, (z * s.h + y) * s.w + j * s.dw - s.pad_left,
              (a * s.kh + i) * s.kw + j, spans[static_cast<std::size_t>(j)]);
        }
    }
}

void depthwise_forward(const ConvSpec& s, const float* x, const float* w, float* y) {
  const i64 taps = s.kd * s.kh * s.kw;
  for (i64 nc = 0; nc < s.n * s.c; ++nc) {
    const float* xp = x + nc * in_volume(s);
    float* yp = y + nc * out_volume(s);
    const float* wc = w + (nc % s.c) * taps;
    std::fill(yp, yp + out_volume(s), 0.0f);
    for_each_depthwise_row(s, [&](i64 out_row, i64 in_at, i64 tap, Inside span) {
      const float k = wc[tap];
      float* __restrict out = yp + out_row;
      const float* __restrict in = xp;
      if (s.sw == 1)
        for (i64 ox = span.lo; ox < span.hi; ++ox) out[ox] += k * in[in_at + ox];
      else
        for (i64 ox = span.lo; ox < span.hi; ++ox) out[ox] += k * in[in_at + ox * s.sw];
    });
  }
}

void depthwise_backward_data(const ConvSpec& s, const float* dy, const float* w, float* dx) {
  const i64 taps = s.kd * s.kh * s.kw;
  for (i64 nc = 0; nc < s.n * s.c; ++nc) {
    const float* dyp = dy + nc * out_volume(s);
    float* dxp = dx + nc * in_volume(s);
    const float* wc = w + (nc % s.c) * taps;
    for_each_depthwise_row(s, [&](i64 out_row, i64 in_at, i64 tap, Inside span) {
      const float k = wc[tap];
      const float* __restrict g = dyp + out_row;
      float* __restrict d = dxp;
      if (s.sw == 1)
        for (i64 ox = span.lo; ox < span.hi; ++ox) d[in_at + ox] += k * g[ox];
      else
        for (i64 ox = span.lo; ox < span.hi; ++ox) d[in_at + ox * s.sw] += k * g[ox];
    });
  }
}

void depthwise_backward_filter(const ConvSpec& s, const float* x, const float* dy, float* dw) {
  const i64 taps = s.kd * s.kh * s.kw;
  std::vector<double> sums(static_cast<std::size_t>(s.c * taps), 0.0);
  for (i64 nc = 0; nc < s.n * s.c; ++nc) {
    const float* xp = x + nc * in_volume(s);
    const float* dyp = dy + nc * out_volume(s);
    double* sc = sums.data() + (nc % s.c) * taps;
    for_each_depthwise_row(s, [&](i64 out_row, i64 in_at, i64 tap, Inside span) {
      const float* g = dyp + out_row;
      sc[tap] += lane_sum(span.hi - span.lo, [&](i64 k) {
        const i64 ox = span.lo + k;
        return static_cast<double>(g[ox]) * xp[in_at + ox * s.sw];
      });
    });
  }
  for (std::size_t i = 0; i < sums.size(); ++i) dw[i] += static_cast<float>(sums[i]);
}

}  // namespace

void CpuBackend::conv2d(const ConvSpec& s, const float* x, const float* w, float* y) {
  if (is_depthwise(s)) return depthwise_forward(s, x, w, y);
  const i64 cg = s.c / s.groups, og = s.o / s.groups;
  const i64 plane = out_volume(s), kdim = cg * s.kd * s.kh * s.kw;
  const bool pointwise = is_pointwise(s);
  float* cols = pointwise ? nullptr : workspace(kdim * plane);
  for (i64 n = 0; n < s.n; ++n)
    for (i64 g = 0; g < s.groups; ++g) {
      const float* xg = x + (n * s.c + g * cg) * in_volume(s);
      if (!pointwise) im2col(s, xg, cg, cols);
      gemm(false, false, og, plane, kdim, 1.0f, w + g * og * kdim, kdim, pointwise ? xg : cols,
           plane, 0.0f, y + (n * s.o + g * og) * plane, plane, 1, 0, 0, 0);
    }
}

void CpuBackend::conv2d_backward_data(const ConvSpec& s, const float* dy, const float* w,
                                      float* dx) {
  if (is_depthwise(s)) return depthwise_backward_data(s, dy, w, dx);
  const i64 cg = s.c / s.groups, og = s.o / s.groups;
  const i64 plane = out_volume(s), kdim = cg * s.kd * s.kh * s.kw;
  const bool pointwise = is_pointwise(s);
  float* cols = pointwise ? nullptr : workspace(kdim * plane);
  for (i64 n = 0; n < s.n; ++n)
    for (i64 g = 0; g < s.groups; ++g) {
      const float* dyg = dy + (n * s.o + g * og) * plane;
      float* dxg = dx + (n * s.c + g * cg) * in_volume(s);
      if (pointwise) {
        gemm(true, false, kdim, plane, og, 1.0f, w + g * og * kdim, kdim, dyg, plane, 1.0f, dxg,
             plane, 1, 0, 0, 0);
      } else {
        gemm(true, false, kdim, plane, og, 1.0f, w + g * og * kdim, kdim, dyg, plane, 0.0f, cols,
             plane, 1, 0, 0, 0);
        col2im_add(s, cols, cg, dxg);
      }
    }
}

void CpuBackend::conv2d_backward_filter(const ConvSpec& s, const float* x, const float* dy,
                                        float* dw) {
  if (is_depthwise(s)) return depthwise_backward_filter(s, x, dy, dw);
  const i64 cg = s.c / s.groups, og = s.o / s.groups;
  const i64 plane = out_volume(s), kdim = cg * s.kd * s.kh * s.kw;
  const bool pointwise = is_pointwise(s);
  float* cols = pointwise ? nullptr : workspace(kdim * plane);
  for (i64 n = 0; n < s.n; ++n)
    for (i64 g = 0; g < s.groups; ++g) {
      const float* xg = x + (n * s.c + g * cg) * in_volume(s);
      if (!pointwise) im2col(s, xg, cg, cols);
      gemm(false, true, og, kdim, plane, 1.0f, dy + (n * s.o + g * og) * plane, plane,
           pointwise ? xg : cols, plane, 1.0f, dw + g * og * kdim, kdim, 1, 0, 0, 0);
    }
}

void CpuBackend::pool2d(const PoolSpec& s, const float* x, float* y, std::int32_t* argmax) {
  const i64 in_plane = s.d * s.h * s.w, out_plane = s.od * s.oh * s.ow;
  if (s.max) {
    // The winners' offsets are kept whether or not the caller asked for them.
    std::vector<std::int32_t> own(argmax ? 0 : static_cast<std::size_t>(out_plane));
    const std::vector<Inside> spans = width_spans(s);
    for (i64 nc = 0; nc < s.n * s.c; ++nc)
      max_pool_plane(s, spans, x + nc * in_plane, y + nc * out_plane,
                     argmax ? argmax + nc * out_plane : own.data());
    return;
  }
  for (i64 nc = 0; nc < s.n * s.c; ++nc) {
    const float* xp = x + nc * in_plane;
    float* yp = y + nc * out_plane;
    for (i64 oz = 0; oz < s.od; ++oz)
      for (i64 oy = 0; oy < s.oh; ++oy)
        for (i64 ox = 0; ox < s.ow; ++ox) {
          const PoolWindow win = pool_window(s, oz, oy, ox);
          float total = 0;
          for_each_tap(s, win, [&](i64 at_in) { total += xp[at_in]; });
          const i64 count = pool_divisor(s, win);
          yp[(oz * s.oh + oy) * s.ow + ox] = count > 0 ? total / static_cast<float>(count) : 0.0f;
        }
  }
}

void CpuBackend::pool2d_backward(const PoolSpec& s, const float* dy, const std::int32_t* argmax,
                                 float* dx) {
  const i64 in_plane = s.d * s.h * s.w, out_plane = s.od * s.oh * s.ow;
  for (i64 nc = 0; nc < s.n * s.c; ++nc) {
    const float* dyp = dy + nc * out_plane;
    float* dxp = dx + nc * in_plane;
    if (s.max) {
      const std::int32_t* ap = argmax + nc * out_plane;
      for (i64 o = 0; o < out_plane; ++o)
        if (ap[o] >= 0) dxp[ap[o]] += dyp[o];
      continue;
    }
    for (i64 oz = 0; oz < s.od; ++oz)
      for (i64 oy = 0; oy < s.oh; ++oy)
        for (i64 ox = 0; ox < s.ow; ++ox) {
          const PoolWindow win = pool_window(s, oz, oy, ox);
          const i64 count = pool_divisor(s, win);
          if (count <= 0 || win.count() <= 0) continue;
          const float g = dyp[(oz * s.oh + oy) * s.ow + ox] / static_cast<float>(count);
          for_each_tap(s, win, [&](i64 at_in) { dxp[at_in] += g; });
        }
  }
}

}  // namespace unity::executor::cpu
