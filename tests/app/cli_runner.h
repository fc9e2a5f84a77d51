#pragma once
// Runs the `unity` binary built with the tests and captures its exit code, stdout and stderr.
#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `env`: variables set for the command (VAR=value ...). By default cpu-local keeps its nominal
// figures, so that what a test checks does not depend on this computer and no test probes it
// (projects/include/unity/use_cases/cpu_probe.h); a test of the probe passes its own.
inline CliResult run_cli(const std::string& args,
                         const std::string& env = "UNITY_CPU_LOCAL=nominal") {
  static int counter = 0;
  const auto dir = std::filesystem::temp_directory_path();
  const auto out =
      dir / ("unity_cli_out_" + std::to_string(::getpid()) + "_" + std::to_string(counter));
  const auto err =
      dir / ("unity_cli_err_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  const std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(UNITY_CLI_PATH) +
                          " " + args + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

// Whether `unity run` can start ranks here.
inline bool has_mpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

// A folder of its own under the temporary directory, removed with everything in it.
struct Folder {
  std::filesystem::path path;
  explicit Folder(const std::string& name)
      : path(std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "_" + name)) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~Folder() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string operator/(const std::string& file) const { return (path / file).string(); }
};
