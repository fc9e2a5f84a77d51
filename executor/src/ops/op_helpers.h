#pragma once
// Small pieces the runners share.
#include <numeric>
#include <string>
#include <vector>

#include "op_runner.h"

namespace unity::executor::detail {

inline i64 product(const std::vector<i64>& v, std::size_t from = 0, std::size_t to = SIZE_MAX) {
  i64 p = 1;
  for (std::size_t i = from; i < v.size() && i < to; ++i) p *= v[i];
  return p;
}

// A buffer's first n floats, copied to the host (the kernels that run on the host:
// pointwise_ops.cpp, axis_ops.cpp).
inline std::vector<float> host_copy(DeviceBackend& be, const void* p, i64 n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  be.to_host(v.data(), p, v.size() * sizeof(float));
  return v;
}

// An int64 tensor (indices) copied to the host.
inline std::vector<std::int64_t> host_ints(DeviceBackend& be, const Slot& s) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(s.elements()));
  be.to_host(v.data(), s.value, v.size() * sizeof(std::int64_t));
  return v;
}

inline void upload(DeviceBackend& be, void* dst, const std::vector<float>& v) {
  be.to_device(dst, v.data(), v.size() * sizeof(float));
}
inline void upload(DeviceBackend& be, void* dst, const std::vector<std::int64_t>& v) {
  be.to_device(dst, v.data(), v.size() * sizeof(std::int64_t));
}

// The activation some operators apply to their result ("activation" attribute).
class FusedActivation {
 public:
  explicit FusedActivation(const Operator& op);
  bool none() const { return none_; }
  // Gelu's derivative needs its input: the runner keeps it.
  bool needs_input() const { return kind_ == UnaryKind::Gelu; }
  // `y` holds the pre-activation on entry and the activation on return; `saved` receives the
  // pre-activation when needs_input().
  void forward(DeviceBackend& be, float* y, float* saved, i64 n) const;
  // The gradient with respect to the pre-activation: `dy` itself when there is no activation,
  // else written into `dz`.
  const float* backward(DeviceBackend& be, const float* y, const float* saved, const float* dy,
                        float* dz, i64 n) const;

 private:
  UnaryKind kind_ = UnaryKind::Identity;
  bool none_ = true;
};

// The seed of a node's random numbers at an iteration (Dropout).
std::uint64_t node_seed(const StepContext& ctx);

}  // namespace unity::executor::detail
