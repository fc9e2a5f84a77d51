#pragma once
// Small pieces the runners share.
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "op_runner.h"

namespace unity::executor::detail {

// The point-wise operators the backends have their own kernels for (CUDA's among them); the others
// run their core definition's function on the host (pointwise_ops.cpp). elementwise_ops.cpp.
std::optional<UnaryKind> unary_kind(OpType t);

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

// The host kernels of broadcasting operators (mask_ops.cpp, arithmetic_ops.cpp) read every
// operand as doubles: float pieces as floats, integer and bool pieces as the int64 the executor
// holds them in; and write their result back in the slot's type.
inline std::vector<double> host_doubles(DeviceBackend& be, const Slot& s) {
  if (s.elem_size == 8) {
    const auto v = host_ints(be, s);
    return {v.begin(), v.end()};
  }
  const auto v = host_copy(be, s.value, s.elements());
  return {v.begin(), v.end()};
}
inline void upload_doubles(DeviceBackend& be, const Slot& s, const std::vector<double>& v) {
  if (s.elem_size == 8) {
    std::vector<std::int64_t> ints(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      ints[i] = wrap_integer(s.dtype, static_cast<std::int64_t>(v[i]));
    upload(be, s.value, ints);
  } else
    upload(be, s.value, std::vector<float>(v.begin(), v.end()));
}

// A task's operands on the host, as doubles, with their local shapes.
struct HostOperands {
  std::vector<std::vector<double>> values;
  std::vector<const double*> ptrs;
  std::vector<std::vector<std::int64_t>> sizes;
};
inline HostOperands host_operands(DeviceBackend& be, const TaskBuffers& t) {
  HostOperands h;
  for (const Slot* s : t.in) {
    h.values.push_back(host_doubles(be, *s));
    h.sizes.push_back(s->shape);
  }
  for (const auto& v : h.values) h.ptrs.push_back(v.data());
  return h;
}

// The input gradients a host kernel adds into: copied to the host for the inputs `takes(s)`
// accepts (ptrs[s] null for the others), written back by upload().
struct HostGradients {
  std::vector<std::vector<float>> values;
  std::vector<float*> ptrs;
  template <class Takes>
  HostGradients(DeviceBackend& be, const TaskBuffers& t, Takes takes)
      : values(t.in.size()), ptrs(t.in.size(), nullptr) {
    for (std::size_t s = 0; s < t.in.size(); ++s) {
      if (!t.in[s]->grad || !takes(s)) continue;
      values[s] = host_copy(be, t.in[s]->grad, t.in[s]->elements());
      ptrs[s] = values[s].data();
    }
  }
  void upload(DeviceBackend& be, const TaskBuffers& t) const {
    for (std::size_t s = 0; s < t.in.size(); ++s)
      if (ptrs[s]) detail::upload(be, t.in[s]->grad, values[s]);
  }
};

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
// Where a task's output `out` lies in the node's whole output, and the node's seed: the numbering
// of Dropout's and Random's numbers. A pipeline micro-batch numbers its elements as the whole
// batch does.
DropoutSpec global_numbering(const StepContext& ctx, const Slot& out);

}  // namespace unity::executor::detail
