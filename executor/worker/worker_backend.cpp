#include "worker_backend.h"

#include <stdexcept>

#include "unity/core/errors.h"
#include "unity/executor/backends.h"
#include "unity/executor/cuda_runtime.h"

namespace unity::worker {

std::unique_ptr<executor::DeviceBackend> make_worker_device(const std::string& backend,
                                                            int threads) {
  if (backend == "cpu") return executor::make_cpu_backend(threads);
  for (const auto& b : executor::available_backends())
    if (b.name == backend && !b.available)
      throw InputError("the " + backend + " backend is not available: " + b.detail);
#if defined(UNITY_HAVE_CUDA)
  return executor::make_cuda_backend(executor::node_local_rank());
#else
  throw InputError("the cuda backend is not available: built without CUDA");
#endif
}

std::unique_ptr<executor::Communicator> make_worker_communicator(const std::string& backend,
                                                                 executor::DeviceBackend& device) {
  if (backend == "cpu") return executor::make_mpi_communicator();
#if defined(UNITY_HAVE_CUDA)
  return executor::make_nccl_communicator(device);
#else
  (void)device;
  throw InputError("the cuda backend is not available: built without CUDA");
#endif
}

}  // namespace unity::worker
