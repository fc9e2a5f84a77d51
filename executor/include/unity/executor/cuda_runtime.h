#pragma once
// The CUDA backend's process-level pieces: which GPU a rank uses and its NCCL communicator.
// Declared only in CUDA builds (UNITY_HAVE_CUDA).
#if defined(UNITY_HAVE_CUDA)
#include <memory>

#include "unity/executor/communicator.h"
#include "unity/executor/device_backend.h"

namespace unity::executor {

// NCCL on the device memory of `device` (a CUDA backend), bootstrapped over MPI_COMM_WORLD: rank 0
// creates the unique id and broadcasts it; group communicators are split from the world one.
std::unique_ptr<Communicator> make_nccl_communicator(DeviceBackend& device);

}  // namespace unity::executor
#endif
