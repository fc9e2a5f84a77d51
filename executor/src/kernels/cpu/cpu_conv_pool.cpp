// Convolution (im2col + OpenBLAS GEMM per sample and group) and pooling on the CPU. Padding may be
// asymmetric: a task computing a band of output rows reads the input rows it needs (a halo from its
// neighbours) and pads only where the band touches the edge of the whole tensor.
#include <algorithm>
#include <limits>

#include "cpu_backend.h"

namespace unity::executor::cpu {
namespace {

// One group of one sample: cols[(c, i, j), (oy, ox)] for channels [c0, c0 + cg).
void im2col(const ConvSpec& s, const float* x, i64 cg, float* cols) {
  const i64 plane = s.oh * s.ow;
  for (i64 c = 0; c < cg; ++c)
    for (i64 i = 0; i < s.kh; ++i)
      for (i64 j = 0; j < s.kw; ++j) {
        float* row = cols + ((c * s.kh + i) * s.kw + j) * plane;
        const float* xc = x + c * s.h * s.w;
        for (i64 oy = 0; oy < s.oh; ++oy) {
          const i64 y = oy * s.sh - s.pad_top + i * s.dh;
          float* out = row + oy * s.ow;
          if (y < 0 || y >= s.h) {
            std::fill(out, out + s.ow, 0.0f);
            continue;
          }
          const float* xr = xc + y * s.w;
          for (i64 ox = 0; ox < s.ow; ++ox) {
            const i64 xx = ox * s.sw - s.pad_left + j * s.dw;
            out[ox] = (xx >= 0 && xx < s.w) ? xr[xx] : 0.0f;
          }
        }
      }
}

void col2im_add(const ConvSpec& s, const float* cols, i64 cg, float* dx) {
  const i64 plane = s.oh * s.ow;
  for (i64 c = 0; c < cg; ++c)
    for (i64 i = 0; i < s.kh; ++i)
      for (i64 j = 0; j < s.kw; ++j) {
        const float* row = cols + ((c * s.kh + i) * s.kw + j) * plane;
        float* xc = dx + c * s.h * s.w;
        for (i64 oy = 0; oy < s.oh; ++oy) {
          const i64 y = oy * s.sh - s.pad_top + i * s.dh;
          if (y < 0 || y >= s.h) continue;
          float* xr = xc + y * s.w;
          const float* in = row + oy * s.ow;
          for (i64 ox = 0; ox < s.ow; ++ox) {
            const i64 xx = ox * s.sw - s.pad_left + j * s.dw;
            if (xx >= 0 && xx < s.w) xr[xx] += in[ox];
          }
        }
      }
}

// A 1x1 convolution with stride 1 and no padding reads the input planes as they are.
bool is_pointwise(const ConvSpec& s) {
  return s.kh == 1 && s.kw == 1 && s.sh == 1 && s.sw == 1 && s.pad_top == 0 && s.pad_bottom == 0 &&
         s.pad_left == 0 && s.pad_right == 0 && s.oh == s.h && s.ow == s.w;
}

}  // namespace

void CpuBackend::conv2d(const ConvSpec& s, const float* x, const float* w, float* y) {
  const i64 cg = s.c / s.groups, og = s.o / s.groups;
  const i64 plane = s.oh * s.ow, kdim = cg * s.kh * s.kw;
  const bool pointwise = is_pointwise(s);
  float* cols = pointwise ? nullptr : workspace(kdim * plane);
  for (i64 n = 0; n < s.n; ++n)
    for (i64 g = 0; g < s.groups; ++g) {
      const float* xg = x + (n * s.c + g * cg) * s.h * s.w;
      if (!pointwise) im2col(s, xg, cg, cols);
      gemm(false, false, og, plane, kdim, 1.0f, w + g * og * kdim, kdim, pointwise ? xg : cols,
           plane, 0.0f, y + (n * s.o + g * og) * plane, plane, 1, 0, 0, 0);
    }
}

void CpuBackend::conv2d_backward_data(const ConvSpec& s, const float* dy, const float* w,
                                      float* dx) {
  const i64 cg = s.c / s.groups, og = s.o / s.groups;
  const i64 plane = s.oh * s.ow, kdim = cg * s.kh * s.kw;
  const bool pointwise = is_pointwise(s);
  float* cols = pointwise ? nullptr : workspace(kdim * plane);
  for (i64 n = 0; n < s.n; ++n)
    for (i64 g = 0; g < s.groups; ++g) {
      const float* dyg = dy + (n * s.o + g * og) * plane;
      float* dxg = dx + (n * s.c + g * cg) * s.h * s.w;
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
  const i64 plane = s.oh * s.ow, kdim = cg * s.kh * s.kw;
  const bool pointwise = is_pointwise(s);
  float* cols = pointwise ? nullptr : workspace(kdim * plane);
  for (i64 n = 0; n < s.n; ++n)
    for (i64 g = 0; g < s.groups; ++g) {
      const float* xg = x + (n * s.c + g * cg) * s.h * s.w;
      if (!pointwise) im2col(s, xg, cg, cols);
      gemm(false, true, og, kdim, plane, 1.0f, dy + (n * s.o + g * og) * plane, plane,
           pointwise ? xg : cols, plane, 1.0f, dw + g * og * kdim, kdim, 1, 0, 0, 0);
    }
}

void CpuBackend::pool2d(const PoolSpec& s, const float* x, float* y, std::int32_t* argmax) {
  for (i64 nc = 0; nc < s.n * s.c; ++nc) {
    const float* xp = x + nc * s.h * s.w;
    float* yp = y + nc * s.oh * s.ow;
    std::int32_t* ap = argmax ? argmax + nc * s.oh * s.ow : nullptr;
    for (i64 oy = 0; oy < s.oh; ++oy)
      for (i64 ox = 0; ox < s.ow; ++ox) {
        const i64 y0 = std::max<i64>(oy * s.sh - s.pad_top, 0);
        const i64 y1 = std::min<i64>(oy * s.sh - s.pad_top + s.kh, s.h);
        const i64 x0 = std::max<i64>(ox * s.sw - s.pad_left, 0);
        const i64 x1 = std::min<i64>(ox * s.sw - s.pad_left + s.kw, s.w);
        if (s.max) {
          float best = -std::numeric_limits<float>::infinity();
          std::int32_t at = -1;
          for (i64 yy = y0; yy < y1; ++yy)
            for (i64 xx = x0; xx < x1; ++xx)
              if (xp[yy * s.w + xx] > best || at < 0) {
                best = xp[yy * s.w + xx];
                at = static_cast<std::int32_t>(yy * s.w + xx);
              }
          yp[oy * s.ow + ox] = at < 0 ? 0.0f : best;
          if (ap) ap[oy * s.ow + ox] = at;
        } else {
          float total = 0;
          for (i64 yy = y0; yy < y1; ++yy)
            for (i64 xx = x0; xx < x1; ++xx) total += xp[yy * s.w + xx];
          const i64 count = (y1 - y0) * (x1 - x0);
          yp[oy * s.ow + ox] = count > 0 ? total / static_cast<float>(count) : 0.0f;
        }
      }
  }
}

void CpuBackend::pool2d_backward(const PoolSpec& s, const float* dy, const std::int32_t* argmax,
                                 float* dx) {
  for (i64 nc = 0; nc < s.n * s.c; ++nc) {
    const float* dyp = dy + nc * s.oh * s.ow;
    float* dxp = dx + nc * s.h * s.w;
    if (s.max) {
      const std::int32_t* ap = argmax + nc * s.oh * s.ow;
      for (i64 o = 0; o < s.oh * s.ow; ++o)
        if (ap[o] >= 0) dxp[ap[o]] += dyp[o];
      continue;
    }
    for (i64 oy = 0; oy < s.oh; ++oy)
      for (i64 ox = 0; ox < s.ow; ++ox) {
        const i64 y0 = std::max<i64>(oy * s.sh - s.pad_top, 0);
        const i64 y1 = std::min<i64>(oy * s.sh - s.pad_top + s.kh, s.h);
        const i64 x0 = std::max<i64>(ox * s.sw - s.pad_left, 0);
        const i64 x1 = std::min<i64>(ox * s.sw - s.pad_left + s.kw, s.w);
        const i64 count = (y1 - y0) * (x1 - x0);
        if (count <= 0) continue;
        const float g = dyp[oy * s.ow + ox] / static_cast<float>(count);
        for (i64 yy = y0; yy < y1; ++yy)
          for (i64 xx = x0; xx < x1; ++xx) dxp[yy * s.w + xx] += g;
      }
  }
}

}  // namespace unity::executor::cpu
