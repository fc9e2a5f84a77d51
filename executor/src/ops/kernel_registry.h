#pragma once
// Which runner computes an operator's nodes. Each kernel file registers the operators it runs with
// one UNITY_REGISTER_KERNEL at its end (a family with UNITY_REGISTER_KERNEL_FAMILY and the
// predicate that names its members), so adding an operator adds its file and edits no list here:
// make_op_runner looks the node's type up. The library is linked whole (cmake/
// UnityWholeArchive.cmake), so a registration nothing references by name still runs.
#include <initializer_list>
#include <memory>

#include "op_runner.h"

namespace unity::executor::detail {

using RunnerFactory = std::unique_ptr<OpRunner> (*)(const Graph& g, const Node& n);

class KernelRegistration {
 public:
  // `factory` runs the nodes of each of `types`.
  KernelRegistration(RunnerFactory factory, std::initializer_list<OpType> types);
  // `factory` runs every operator `member` holds that no type registration names.
  KernelRegistration(RunnerFactory factory, bool (*member)(OpType));
};

// The factory for `type`: the one that names it, else the one family that holds it; null when
// none does (a source, or an operator without a kernel). Throws LoweringError when two families
// claim it.
RunnerFactory registered_kernel(OpType type);

}  // namespace unity::executor::detail

#define UNITY_KERNEL_CONCAT_(a, b) a##b
#define UNITY_KERNEL_CONCAT(a, b) UNITY_KERNEL_CONCAT_(a, b)
#define UNITY_REGISTER_KERNEL(factory, ...)                                                     \
  namespace {                                                                                   \
  const ::unity::executor::detail::KernelRegistration UNITY_KERNEL_CONCAT(kernel_registration_, \
                                                                          __COUNTER__){         \
      factory, {__VA_ARGS__}};                                                                  \
  }
#define UNITY_REGISTER_KERNEL_FAMILY(factory, member)                                           \
  namespace {                                                                                   \
  const ::unity::executor::detail::KernelRegistration UNITY_KERNEL_CONCAT(kernel_registration_, \
                                                                          __COUNTER__){factory, \
                                                                                       member}; \
  }
