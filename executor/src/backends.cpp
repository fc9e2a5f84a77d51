#include "unity/executor/backends.h"

#include "backend_probes.h"

namespace unity::executor {

std::vector<BackendInfo> available_backends() {
  std::vector<BackendInfo> result;
  result.push_back(detail::probe_cpu_backend());
#if defined(UNITY_HAVE_CUDA)
  result.push_back(detail::probe_cuda_backend());
#else
  result.push_back({"cuda", false, "built without CUDA"});
#endif
  return result;
}

}  // namespace unity::executor
