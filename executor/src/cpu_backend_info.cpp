// The CPU backend (OpenBLAS kernels, MPI collectives) is always built; its detail names the exact
// libraries because the BLAS threading model and the MPI flavour change measured times.
#include <cblas.h>
#include <mpi.h>

#include <string>

#include "backend_probes.h"

namespace unity::executor::detail {

namespace {

std::string mpi_library_version() {
  // Callable before MPI_Init (MPI-3), so probing does not start the MPI runtime in the GUI.
  char buffer[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(buffer, &length) != MPI_SUCCESS) return "MPI (version unknown)";
  std::string version(buffer, static_cast<std::size_t>(length));
  // Open MPI appends release dates and repository ids on further lines; the first line is enough.
  if (auto end = version.find_first_of("\r\n,"); end != std::string::npos) version.resize(end);
  while (!version.empty() && (version.back() == ' ' || version.back() == '\0')) version.pop_back();
  return version;
}

std::string openblas_config() {
  std::string config = openblas_get_config();
  while (!config.empty() && config.back() == ' ') config.pop_back();
  return config;
}

}  // namespace

BackendInfo probe_cpu_backend() {
  return {"cpu", true, openblas_config() + "; " + mpi_library_version()};
}

}  // namespace unity::executor::detail
