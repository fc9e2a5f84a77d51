#include "kernel_registry.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "unity/executor/program.h"

namespace unity::executor::detail {
namespace {

struct Registry {
  std::map<OpType, RunnerFactory> by_type;
  std::vector<std::pair<bool (*)(OpType), RunnerFactory>> families;
};

// Built during static initialization by the kernel files, read after main starts.
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

KernelRegistration::KernelRegistration(RunnerFactory factory, std::initializer_list<OpType> types) {
  for (OpType t : types) {
    if (!registry().by_type.emplace(t, factory).second) {
      // Two kernel files claim one operator: a build error in spirit, found before any test runs.
      std::fprintf(stderr, "unity: two kernels registered for %s\n",
                   std::string(to_string(t)).c_str());
      std::abort();
    }
  }
}

KernelRegistration::KernelRegistration(RunnerFactory factory, bool (*member)(OpType)) {
  registry().families.emplace_back(member, factory);
}

RunnerFactory registered_kernel(OpType type) {
  const Registry& r = registry();
  if (auto it = r.by_type.find(type); it != r.by_type.end()) return it->second;
  RunnerFactory found = nullptr;
  for (const auto& [member, factory] : r.families) {
    if (!member(type)) continue;
    if (found != nullptr && found != factory)
      throw LoweringError(fmt::format("two kernel families claim {}", to_string(type)));
    found = factory;
  }
  return found;
}

}  // namespace unity::executor::detail
