// Convolution (im2col + OpenBLAS GEMM per sample and group) and pooling on the CPU, over up to
// three spatial dims (depth, height, width; a 1-D or 2-D spec has depth and height 1). Padding may
// be asymmetric: a task computing a band of output rows reads the input rows it needs (a halo from
// its neighbours) and pads only where the band touches the edge of the whole tensor.
#include <algorithm>
#include <limits>

#include "cpu_backend.h"

namespace unity::executor::cpu {
namespace {

i64 in_volume(const ConvSpec& s) { return s.d * s.h * s.w; }
i64 out_volume(const ConvSpec& s) { return s.od * s.oh * s.ow; }

// One group of one sample: cols[(c, a, i, j), (oz, oy, ox)] for channels [c0, c0 + cg), where
// (a, i, j) is the kernel offset along depth, height and width.
void im2col(const ConvSpec& s, const float* x, i64 cg, float* cols) {
  const i64 plane = out_volume(s);
  for (i64 c = 0; c < cg; ++c)
    for (i64 a = 0; a < s.kd; ++a)
      for (i64 i = 0; i < s.kh; ++i)
        for (i64 j = 0; j < s.kw; ++j) {
          float* row = cols + (((c * s.kd + a) * s.kh + i) * s.kw + j) * plane;
          const float* xc = x + c * in_volume(s);
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
              for (i64 ox = 0; ox < s.ow; ++ox) {
                const i64 xx = ox * s.sw - s.pad_left + j * s.dw;
                out[ox] = (xx >= 0 && xx < s.w) ? xr[xx] : 0.0f;
              }
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
          for (i64 oz = 0; oz < s.od; ++oz) {
            const i64 z = oz * s.sd - s.pad_front + a * s.dd;
            if (z < 0 || z >= s.d) continue;
            for (i64 oy = 0; oy < s.oh; ++oy) {
              const i64 y = oy * s.sh - s.pad_top + i * s.dh;
              if (y < 0 || y >= s.h) continue;
              float* xr = xc + (z * s.h + y) * s.w;
              const float* in = row + (oz * s.oh + oy) * s.ow;
              for (i64 ox = 0; ox < s.ow; ++ox) {
                const i64 xx = ox * s.sw - s.pad_left + j * s.dw;
                if (xx >= 0 && xx < s.w) xr[xx] += in[ox];
              }
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

}  // namespace

void CpuBackend::conv2d(const ConvSpec& s, const float* x, const float* w, float* y) {
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
  for (i64 nc = 0; nc < s.n * s.c; ++nc) {
    const float* xp = x + nc * in_plane;
    float* yp = y + nc * out_plane;
    std::int32_t* ap = argmax ? argmax + nc * out_plane : nullptr;
    for (i64 oz = 0; oz < s.od; ++oz)
      for (i64 oy = 0; oy < s.oh; ++oy)
        for (i64 ox = 0; ox < s.ow; ++ox) {
          const PoolWindow win = pool_window(s, oz, oy, ox);
          const i64 o = (oz * s.oh + oy) * s.ow + ox;
          if (s.max) {
            float best = -std::numeric_limits<float>::infinity();
            std::int32_t at = -1;
            for_each_tap(s, win, [&](i64 at_in) {
              if (xp[at_in] > best || at < 0) {
                best = xp[at_in];
                at = static_cast<std::int32_t>(at_in);
              }
            });
            yp[o] = at < 0 ? 0.0f : best;
            if (ap) ap[o] = at;
          } else {
            float total = 0;
            for_each_tap(s, win, [&](i64 at_in) { total += xp[at_in]; });
            const i64 count = pool_divisor(s, win);
            yp[o] = count > 0 ? total / static_cast<float>(count) : 0.0f;
          }
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
