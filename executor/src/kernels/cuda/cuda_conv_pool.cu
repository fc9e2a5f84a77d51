// Convolutions with cuDNN (fp32 FMA math: no TF32, so results match the CPU reference), pooling with
// our kernels. cuDNN pads symmetrically; a task band whose halo makes the padding asymmetric runs on
// an explicitly padded copy of its input.
#include "cuda_backend.h"

namespace unity::executor::cuda {
namespace {

struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  Descriptors() {
    check(cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor");
    check(cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor");
    check(cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor");
    check(cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
  }
  ~Descriptors() {
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyConvolutionDescriptor(conv);
  }
};

// cuDNN runs the 1-D and 2-D convolutions (a 1-D one is 2-D of height 1); 3-D ones, and the
// negative end padding of a transposed convolution's output_padding, run on the CPU backend only.
void refuse_unsupported(const ConvSpec& s) {
  if (s.is_3d())
    throw std::runtime_error("the CUDA backend has no 3-D convolution (depth > 1); run it on the CPU backend");
  if (s.pad_front < 0 || s.pad_back < 0 || s.pad_top < 0 || s.pad_bottom < 0 || s.pad_left < 0 || s.pad_right < 0)
    throw std::runtime_error(
        "the CUDA backend has no transposed convolution with output_padding; run it on the CPU backend");
}

void refuse_unsupported(const PoolSpec& s) {
  if (s.is_3d()) throw std::runtime_error("the CUDA backend has no 3-D pooling (depth > 1); run it on the CPU backend");
  if (s.dilated()) throw std::runtime_error("the CUDA backend has no dilated pooling; run it on the CPU backend");
  if (s.count_include_pad)
    throw std::runtime_error(
        "the CUDA backend has no average pooling that counts padding (count_include_pad); run it on the CPU backend");
}

bool symmetric(const ConvSpec& s) { return s.pad_top == s.pad_bottom && s.pad_left == s.pad_right; }

// Descriptors for an input of h x w with padding (ph, pw).
void describe(Descriptors& d, const ConvSpec& s, i64 h, i64 w, i64 ph, i64 pw) {
  check(cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(s.n),
                                   static_cast<int>(s.c), static_cast<int>(h), static_cast<int>(w)),
        "cudnnSetTensor4dDescriptor (x)");
  check(cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(s.o),
                                   static_cast<int>(s.c / s.groups), static_cast<int>(s.kh), static_cast<int>(s.kw)),
        "cudnnSetFilter4dDescriptor");
  check(cudnnSetConvolution2dDescriptor(d.conv, static_cast<int>(ph), static_cast<int>(pw), static_cast<int>(s.sh),
                                        static_cast<int>(s.sw), static_cast<int>(s.dh), static_cast<int>(s.dw),
                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor");
  check(cudnnSetConvolutionGroupCount(d.conv, static_cast<int>(s.groups)), "cudnnSetConvolutionGroupCount");
  check(cudnnSetConvolutionMathType(d.conv, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
  int n, c, oh, ow;
  check(cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &n, &c, &oh, &ow), "cudnnGetConvolution2dForwardOutputDim");
  if (oh != s.oh || ow != s.ow) throw std::runtime_error("cuDNN output size disagrees with the plan's");
  check(cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, oh, ow),
        "cudnnSetTensor4dDescriptor (y)");
}

// Copies x [n, c, h, w] into a zeroed padded buffer.
const float* padded(CudaBackend& be, const ConvSpec& s, const float* x) {
  const i64 hp = s.h + s.pad_top + s.pad_bottom, wp = s.w + s.pad_left + s.pad_right;
  auto* buf = static_cast<float*>(be.scratch(0, static_cast<std::size_t>(s.n * s.c * hp * wp) * 4));
  be.fill_zero(buf, static_cast<std::size_t>(s.n * s.c * hp * wp) * 4);
  BoxCopy c;
  c.src = x;
  c.dst = buf;
  c.src_shape = {s.n, s.c, s.h, s.w};
  c.src_offset = {0, 0, 0, 0};
  c.dst_shape = {s.n, s.c, hp, wp};
  c.dst_offset = {0, 0, s.pad_top, s.pad_left};
  c.extent = c.src_shape;
  be.copy_box(c);
  return buf;
}

#define GRID_LOOP(i, n) for (long long i = blockIdx.x * 256LL + threadIdx.x; i < (n); i += 256LL * gridDim.x)

__device__ long long lmin(long long a, long long b) { return a < b ? a : b; }
__device__ long long lmax(long long a, long long b) { return a > b ? a : b; }

__global__ void pool_kernel(PoolSpec s, const float* x, float* y, int* argmax) {
  const long long n = s.n * s.c * s.oh * s.ow;
  GRID_LOOP(i, n) {
    const long long ox = i % s.ow, oy = (i / s.ow) % s.oh, nc = i / (s.ow * s.oh);
    const long long y0 = lmax(oy * s.sh - s.pad_top, 0), y1 = lmin(oy * s.sh - s.pad_top + s.kh, s.h);
    const long long x0 = lmax(ox * s.sw - s.pad_left, 0), x1 = lmin(ox * s.sw - s.pad_left + s.kw, s.w);
    const float* p = x + nc * s.h * s.w;
    if (s.max) {
      float best = 0;
      int at = -1;
      for (long long yy = y0; yy < y1; ++yy)
        for (long long xx = x0; xx < x1; ++xx)
          if (at < 0 || p[yy * s.w + xx] > best) {
            best = p[yy * s.w + xx];
            at = static_cast<int>(yy * s.w + xx);
          }
      y[i] = at < 0 ? 0.0f : best;
      if (argmax) argmax[i] = at;
    } else {
      float total = 0;
      for (long long yy = y0; yy < y1; ++yy)
        for (long long xx = x0; xx < x1; ++xx) total += p[yy * s.w + xx];
      const long long count = (y1 - y0) * (x1 - x0);
      y[i] = count > 0 ? total / static_cast<float>(count) : 0.0f;
    }
  }
}

__global__ void pool_backward_kernel(PoolSpec s, const float* dy, const int* argmax, float* dx) {
  const long long n = s.n * s.c * s.oh * s.ow;
  GRID_LOOP(i, n) {
    const long long ox = i % s.ow, oy = (i / s.ow) % s.oh, nc = i / (s.ow * s.oh);
    float* p = dx + nc * s.h * s.w;
    if (s.max) {
      if (argmax[i] >= 0) atomicAdd(p + argmax[i], dy[i]);
      continue;
    }
    const long long y0 = lmax(oy * s.sh - s.pad_top, 0), y1 = lmin(oy * s.sh - s.pad_top + s.kh, s.h);
    const long long x0 = lmax(ox * s.sw - s.pad_left, 0), x1 = lmin(ox * s.sw - s.pad_left + s.kw, s.w);
    const long long count = (y1 - y0) * (x1 - x0);
    if (count <= 0) continue;
    const float g = dy[i] / static_cast<float>(count);
    for (long long yy = y0; yy < y1; ++yy)
      for (long long xx = x0; xx < x1; ++xx) atomicAdd(p + yy * s.w + xx, g);
  }
}

}  // namespace

void CudaBackend::conv2d(const ConvSpec& s, const float* x, const float* w, float* y) {
  refuse_unsupported(s);
  Descriptors d;
  const bool sym = symmetric(s);
  if (sym) {
    describe(d, s, s.h, s.w, s.pad_top, s.pad_left);
  } else {
    x = padded(*this, s, x);
    describe(d, s, s.h + s.pad_top + s.pad_bottom, s.w + s.pad_left + s.pad_right, 0, 0);
  }
  cudnnConvolutionFwdAlgoPerf_t perf[8];
  int found = 0;
  check(cudnnGetConvolutionForwardAlgorithm_v7(cudnn_, d.x, d.w, d.conv, d.y, 8, &found, perf),
        "cudnnGetConvolutionForwardAlgorithm_v7");
  const auto algo = found > 0 ? perf[0].algo : CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  std::size_t bytes = 0;
  check(cudnnGetConvolutionForwardWorkspaceSize(cudnn_, d.x, d.w, d.conv, d.y, algo, &bytes), "workspace size");
  void* ws = bytes ? scratch(1, bytes) : nullptr;
  const float one = 1.0f, zero = 0.0f;
  check(cudnnConvolutionForward(cudnn_, &one, d.x, x, d.w, w, d.conv, algo, ws, bytes, &zero, d.y, y),
        "cudnnConvolutionForward");
}

void CudaBackend::conv2d_backward_data(const ConvSpec& s, const float* dy, const float* w, float* dx) {
  refuse_unsupported(s);
  Descriptors d;
  const bool sym = symmetric(s);
  const i64 hp = s.h + s.pad_top + s.pad_bottom, wp = s.w + s.pad_left + s.pad_right;
  float* target = dx;
  if (sym) {
    describe(d, s, s.h, s.w, s.pad_top, s.pad_left);
  } else {
    describe(d, s, hp, wp, 0, 0);
    target = static_cast<float*>(scratch(0, static_cast<std::size_t>(s.n * s.c * hp * wp) * 4));
  }
  cudnnConvolutionBwdDataAlgoPerf_t perf[8];
  int found = 0;
  check(cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_, d.w, d.y, d.conv, d.x, 8, &found, perf),
        "cudnnGetConvolutionBackwardDataAlgorithm_v7");
  const auto algo = found > 0 ? perf[0].algo : CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  std::size_t bytes = 0;
  check(cudnnGetConvolutionBackwardDataWorkspaceSize(cudnn_, d.w, d.y, d.conv, d.x, algo, &bytes), "workspace size");
  void* ws = bytes ? scratch(1, bytes) : nullptr;
  const float one = 1.0f, zero = 0.0f;
  check(cudnnConvolutionBackwardData(cudnn_, &one, d.w, w, d.y, dy, d.conv, algo, ws, bytes, sym ? &one : &zero, d.x,
                                     target),
        "cudnnConvolutionBackwardData");
  if (sym) return;
  // The band's own rows and columns of the padded gradient.
  BoxCopy c;
  c.src = target;
  c.dst = dx;
  c.add = true;
  c.src_shape = {s.n, s.c, hp, wp};
  c.src_offset = {0, 0, s.pad_top, s.pad_left};
  c.dst_shape = {s.n, s.c, s.h, s.w};
  c.dst_offset = {0, 0, 0, 0};
  c.extent = c.dst_shape;
  copy_box(c);
}

void CudaBackend::conv2d_backward_filter(const ConvSpec& s, const float* x, const float* dy, float* dw) {
  refuse_unsupported(s);
  Descriptors d;
  if (symmetric(s)) {
    describe(d, s, s.h, s.w, s.pad_top, s.pad_left);
  } else {
    x = padded(*this, s, x);
    describe(d, s, s.h + s.pad_top + s.pad_bottom, s.w + s.pad_left + s.pad_right, 0, 0);
  }
  cudnnConvolutionBwdFilterAlgoPerf_t perf[8];
  int found = 0;
  check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnn_, d.x, d.y, d.conv, d.w, 8, &found, perf),
        "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
  const auto algo = found > 0 ? perf[0].algo : CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  std::size_t bytes = 0;
  check(cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnn_, d.x, d.y, d.conv, d.w, algo, &bytes), "workspace size");
  void* ws = bytes ? scratch(1, bytes) : nullptr;
  const float one = 1.0f;
  check(cudnnConvolutionBackwardFilter(cudnn_, &one, d.x, x, d.y, dy, d.conv, algo, ws, bytes, &one, d.w, dw),
        "cudnnConvolutionBackwardFilter");
}

void CudaBackend::pool2d(const PoolSpec& s, const float* x, float* y, std::int32_t* argmax) {
  refuse_unsupported(s);
  const i64 n = s.n * s.c * s.oh * s.ow;
  if (n > 0) pool_kernel<<<blocks_for(n), 256, 0, stream_>>>(s, x, y, argmax);
}

void CudaBackend::pool2d_backward(const PoolSpec& s, const float* dy, const std::int32_t* argmax, float* dx) {
  refuse_unsupported(s);
  const i64 n = s.n * s.c * s.oh * s.ow;
  if (n > 0) pool_backward_kernel<<<blocks_for(n), 256, 0, stream_>>>(s, dy, argmax, dx);
}

}  // namespace unity::executor::cuda
