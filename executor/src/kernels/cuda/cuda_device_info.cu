// The CUDA backend probe and the self-test kernel. Compiled by nvcc only in CUDA builds; it must work
// on build machines without a GPU, where cudaGetDeviceCount() fails instead of returning 0.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "backend_probes.h"
#include "unity/executor/cuda_self_test.h"

namespace unity::executor {

namespace {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(status));
  }
}

// 13000 -> "13.0" (CUDA encodes versions as 1000*major + 10*minor).
std::string cuda_version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string library_versions() {
  std::string out;
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) out += "CUDA runtime " + cuda_version_string(runtime);
  // cublasGetProperty needs no handle (a handle needs a device).
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS) {
    out += ", cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  }
  // cuDNN 9 encodes 10000*major + 100*minor + patch.
  const std::size_t cudnn = cudnnGetVersion();
  out += ", cuDNN " + std::to_string(cudnn / 10000) + "." + std::to_string((cudnn % 10000) / 100) + "." +
         std::to_string(cudnn % 100);
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) {
    // NCCL >= 2.9 encodes 10000*major + 100*minor + patch.
    out += ", NCCL " + std::to_string(nccl / 10000) + "." + std::to_string((nccl % 10000) / 100) + "." +
           std::to_string(nccl % 100);
  }
  return out;
}

__global__ void fill_iota_kernel(float* out, std::size_t n, float start, float step) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = start + static_cast<float>(i) * step;
}

}  // namespace

namespace detail {

BackendInfo probe_cuda_backend() {
  BackendInfo info{"cuda", false, {}};
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    // Typical without a GPU: cudaErrorNoDevice or cudaErrorInsufficientDriver.
    info.detail = "no CUDA device (" +
                  std::string(status == cudaSuccess ? "0 devices" : cudaGetErrorString(status)) +
                  "); built with " + library_versions();
    cudaGetLastError();  // the failure is also recorded as the last error: clear it for later callers
    return info;
  }
  info.available = true;
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    info.detail += "GPU " + std::to_string(d) + ": " + prop.name + " (sm_" + std::to_string(prop.major) +
                   std::to_string(prop.minor) + ", " +
                   std::to_string(prop.totalGlobalMem >> 20) + " MiB); ";
  }
  info.detail += library_versions();
  return info;
}

}  // namespace detail

std::vector<float> cuda_fill_iota(std::size_t n, float start, float step) {
  std::vector<float> host(n);
  if (n == 0) return host;
  check(cudaSetDevice(0), "cudaSetDevice");
  float* device = nullptr;
  check(cudaMalloc(&device, n * sizeof(float)), "cudaMalloc");
  constexpr unsigned threads = 256;
  const auto blocks = static_cast<unsigned>((n + threads - 1) / threads);
  fill_iota_kernel<<<blocks, threads>>>(device, n, start, step);
  cudaError_t status = cudaGetLastError();  // launch errors (e.g. no kernel image for this GPU)
  if (status == cudaSuccess) status = cudaDeviceSynchronize();
  if (status == cudaSuccess) status = cudaMemcpy(host.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(device);
  check(status, "fill_iota_kernel");
  return host;
}

}  // namespace unity::executor
