#pragma once
// The device and communicator of one rank for a backend name: cpu (OpenBLAS + MPI) or cuda (one GPU
// per process, the node-local rank's, and NCCL bootstrapped over MPI).
#include <memory>
#include <string>

#include "unity/executor/communicator.h"
#include "unity/executor/device_backend.h"

namespace unity::worker {

std::unique_ptr<executor::DeviceBackend> make_worker_device(const std::string& backend,
                                                            int threads);
std::unique_ptr<executor::Communicator> make_worker_communicator(const std::string& backend,
                                                                 executor::DeviceBackend& device);

}  // namespace unity::worker
