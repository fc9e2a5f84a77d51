#pragma once
// A tiny kernel that proves this build's device code runs on the GPU present (right architecture,
// working driver and runtime). Only declared in CUDA builds (UNITY_HAVE_CUDA, set by the executor
// target); callers check available_backends() first.
#if defined(UNITY_HAVE_CUDA)
#include <cstddef>
#include <vector>

namespace unity::executor {

// Fills a device buffer of n floats with value[i] = start + i * step on device 0 and copies it
// back. Throws std::runtime_error naming the failing CUDA call (e.g. no device).
std::vector<float> cuda_fill_iota(std::size_t n, float start, float step);

}  // namespace unity::executor
#endif
