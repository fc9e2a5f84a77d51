#pragma once
// OpenBLAS chooses its kernels by the CPU models it knows. On a CPU newer than its table (Debian
// 12's 0.3.21 on an Emerald Rapids, family 6 model 207) it falls back to Prescott's SSE3 kernels:
// one core then runs a 512^3 sgemm at 5.3 GFLOP/s where the AVX-512 kernels reach 29.5 on the
// same core. The kernels are chosen when the library loads, so the programs start again with
// OPENBLAS_CORETYPE naming the kernels the CPU's instruction sets do run, and ranks are started
// with it.
#include <optional>
#include <string>

namespace unity::executor {

// The OPENBLAS_CORETYPE to start ranks with: a core whose kernels this CPU runs where OpenBLAS,
// loaded in this process, chose a core from before AVX; nothing where its choice stands (a
// user's OPENBLAS_CORETYPE always does).
std::optional<std::string> openblas_core_override();

// Whether `core` (an OpenBLAS core name, any case) is one of its x86 cores without AVX kernels.
bool is_core_before_avx(std::string core);

// The core name OpenBLAS chose in this process ("SkylakeX", "Prescott", ...).
std::string openblas_core();

// Where openblas_core_override() names a core: sets OPENBLAS_CORETYPE and executes this program
// again with the same arguments, so that what runs in this process (a one-rank reference, a
// search's profiles) uses the kernels its ranks use. Called first thing in main; returns where
// nothing needs to change or the program cannot be executed again.
void reexec_with_openblas_core(char** argv);

}  // namespace unity::executor
