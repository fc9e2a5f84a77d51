#pragma once
// Per-backend probes behind available_backends(); the CUDA one lives in a .cu file so that only nvcc
// sees the CUDA headers.
#include "unity/executor/backends.h"

namespace unity::executor::detail {

BackendInfo probe_cpu_backend();
#if defined(UNITY_HAVE_CUDA)
BackendInfo probe_cuda_backend();
#endif

}  // namespace unity::executor::detail
