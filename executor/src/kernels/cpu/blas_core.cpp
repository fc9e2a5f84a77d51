#include "unity/executor/blas_core.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <string_view>

#include <unistd.h>

extern "C" char* openblas_get_corename(void);

namespace unity::executor {

std::string openblas_core() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

bool is_core_before_avx(std::string core) {
  std::transform(core.begin(), core.end(), core.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // OpenBLAS's x86 cores without AVX kernels: what it falls back to on a model it does not know.
  static constexpr std::array<std::string_view, 11> kBeforeAvx{
      "katmai", "coppermine", "northwood",  "prescott", "banias", "atom",
      "core2",  "penryn",     "dunnington", "nehalem",  "unknown"};
  return std::find(kBeforeAvx.begin(), kBeforeAvx.end(), core) != kBeforeAvx.end();
}

std::optional<std::string> openblas_core_override() {
  if (const char* set = std::getenv("OPENBLAS_CORETYPE"); set && *set) return std::nullopt;
  if (!is_core_before_avx(openblas_core())) return std::nullopt;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // __builtin_cpu_supports also checks that the OS saves the wide registers.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512cd"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  if (__builtin_cpu_supports("avx")) return "Sandybridge";
#endif
  return std::nullopt;
}

void reexec_with_openblas_core(char** argv) {
  const auto core = openblas_core_override();
  if (!core || setenv("OPENBLAS_CORETYPE", core->c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Not executed again (no /proc): this process keeps OpenBLAS's choice; its children take the
  // variable set above.
}

}  // namespace unity::executor
