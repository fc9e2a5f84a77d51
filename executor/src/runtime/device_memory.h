#pragma once
// Owns device allocations for the lifetime of a run; remembers which gradient buffers to clear
// before each backward pass.
#include <cstddef>
#include <new>
#include <string>
#include <vector>

#include "unity/core/errors.h"
#include "unity/executor/device_backend.h"

namespace unity::executor::detail {

class DeviceMemory {
 public:
  explicit DeviceMemory(DeviceBackend& backend) : backend_(backend) {}
  ~DeviceMemory() {
    for (void* p : owned_) backend_.release(p);
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  void* allocate(std::size_t bytes) {
    void* p = nullptr;
    try {
      p = backend_.allocate(bytes);
    } catch (const std::bad_alloc&) {
      throw InputError("out of memory on the " + backend_.name() +
                       " device: " + std::to_string(bytes) + " more bytes after " +
                       std::to_string(bytes_) + " (the plan does not fit this machine)");
    }
    owned_.push_back(p);
    bytes_ += bytes;
    return p;
  }
  float* allocate_floats(std::int64_t n) {
    return static_cast<float*>(allocate(static_cast<std::size_t>(n) * sizeof(float)));
  }
  // A gradient buffer: zeroed by clear_gradients(), or (`weight`) by clear_weight_gradients() only,
  // so that micro-batches can accumulate into weight gradients.
  float* allocate_gradient(std::int64_t n, bool weight = false) {
    float* p = allocate_floats(n);
    (weight ? weight_gradients_ : gradients_)
        .push_back({p, static_cast<std::size_t>(n) * sizeof(float)});
    return p;
  }
  void clear_gradients() {
    for (const auto& g : gradients_) backend_.fill_zero(g.first, g.second);
  }
  void clear_weight_gradients() {
    for (const auto& g : weight_gradients_) backend_.fill_zero(g.first, g.second);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  DeviceBackend& backend_;
  std::vector<void*> owned_;
  std::vector<std::pair<void*, std::size_t>> gradients_, weight_gradients_;
  std::size_t bytes_ = 0;
};

}  // namespace unity::executor::detail
