// The ranks' OpenBLAS kernels (blas_core.h): started by the launcher, a rank runs kernels this
// CPU's instruction sets run, even where OpenBLAS does not know the CPU's model and would fall back
// to Prescott's (5x slower here); a user's own OPENBLAS_CORETYPE is left as it is.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "distributed_support.h"
#include "unity/core/strategies/data_parallel.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/executor/blas_core.h"

using namespace unity;
using namespace unity::executor;
using namespace unity::executor::testing;

namespace {

bool cpu_has_avx2() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

bool has_coretype_flag(const std::vector<std::string>& command) {
  return std::any_of(command.begin(), command.end(),
                     [](const std::string& a) { return a.rfind("OPENBLAS_CORETYPE=", 0) == 0; });
}

}  // namespace

TEST(BlasCore, RanksRunKernelsThisCpuRuns) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed";
  if (!cpu_has_avx2()) GTEST_SKIP() << "this CPU has no AVX2: OpenBLAS's own choice stands";
  TempDir dir;
  const auto plan = write_plan(dir, "dp", make_data_parallel(zoo::build("mnist-mlp", 32), 2), 2);
  LaunchOptions o = launch_options(plan, 2);
  o.iterations = 1;
  o.warmup = 0;
  const LaunchResult run = launch_run(o);
  const std::string core = run.result.value("blas_core", "");
  ASSERT_FALSE(core.empty()) << run.result.dump();
  EXPECT_TRUE(is_core_before_avx("Prescott"));  // this machine's fallback without the fix
  EXPECT_FALSE(is_core_before_avx(core)) << "ranks ran OpenBLAS's " << core << " kernels";
  // Where this process's OpenBLAS chose an old core, the launcher named a newer one.
  EXPECT_EQ(has_coretype_flag(run.command), openblas_core_override().has_value());
  EXPECT_EQ(openblas_core_override().has_value(), is_core_before_avx(openblas_core()));
}

TEST(BlasCore, AUsersCoreTypeStands) {
  const char* saved = std::getenv("OPENBLAS_CORETYPE");
  const std::string kept = saved ? saved : "";
  setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  EXPECT_FALSE(openblas_core_override().has_value());
  LaunchOptions o;
  o.ranks = 2;
  o.plan = "plan.json";
  const auto command = mpirun_command(o, "mpirun", "unity-worker", "/tmp");
  EXPECT_FALSE(has_coretype_flag(command));
  // Passed on as it is, for ranks on other nodes.
  EXPECT_NE(std::find(command.begin(), command.end(), "OPENBLAS_CORETYPE"), command.end());
  if (saved)
    setenv("OPENBLAS_CORETYPE", kept.c_str(), 1);
  else
    unsetenv("OPENBLAS_CORETYPE");
}
