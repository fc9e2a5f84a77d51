// The import sweep at the published sizes (issue 20): every model of tests/python/export_sweep.py
// exported from PyTorch, imported, and planned jointly on 2 summit nodes by the `unity` CLI as a
// user runs it (its default time limit included). Prints, per model, the operators, the search
// status, the wall time and the peak memory (maximum resident set) of `unity optimize`, and the
// predicted iteration time. The acceptance line is 60 s and 2 GB per model on this machine.
//   build/tests/bench/unity_bench_import_sweep [--dir DIR] [--batch N] [--nodes N] [--only NAME...]
// DIR keeps the exports between runs (default: a temporary folder, exported afresh).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

struct Measured {
  int exit_code = -1;
  double seconds = 0;
  double peak_mb = 0;
};

// Runs `command` through the shell and measures it as /usr/bin/time would: wall time and the
// maximum resident set of the child.
Measured measure(const std::string& command) {
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  Measured m;
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  m.peak_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;  // kilobytes on Linux
  return m;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  fs::path dir;
  int batch = 192, nodes = 2;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--batch" && i + 1 < argc) {
      batch = std::atoi(argv[++i]);
    } else if (a == "--nodes" && i + 1 < argc) {
      nodes = std::atoi(argv[++i]);
    } else if (a == "--only") {
      while (i + 1 < argc && argv[i + 1][0] != '-') only.push_back(argv[++i]);
    } else {
      fmt::print(stderr,
                 "usage: unity_bench_import_sweep [--dir DIR] [--batch N] [--nodes N] "
                 "[--only NAME...]\n");
      return 1;
    }
  }
  const bool temporary = dir.empty();
  if (temporary) dir = fs::temp_directory_path() / fmt::format("unity-sweep-bench-{}", getpid());
  fs::create_directories(dir);
  const fs::path script = fs::path(UNITY_SOURCE_DIR) / "tests" / "python" / "export_sweep.py";
  if (std::system("/usr/bin/python3 -c 'import torch, torchvision' >/dev/null 2>&1") != 0) {
    fmt::print("skipped: /usr/bin/python3 cannot import torch and torchvision\n");
    return 0;
  }
  std::vector<std::string> models = only;
  if (models.empty()) {
    const std::string listing = "/usr/bin/python3 '" + script.string() + "' --list > '" +
                                (dir / "models.txt").string() + "'";
    if (std::system(listing.c_str()) != 0) return 1;
    std::istringstream names(read_file(dir / "models.txt"));
    for (std::string n; names >> n;) models.push_back(n);
  }
  fmt::print("joint search on {} summit nodes ({} GPUs), batch {}, unity's default time limit\n",
             nodes, nodes * 6, batch);
  fmt::print("{:<20} {:>6} {:>12} {:>8} {:>9} {:>12}  {}\n", "model", "ops", "status", "wall s",
             "peak MB", "iteration ms", "plan");
  int over = 0;
  for (const auto& model : models) {
    const fs::path onnx = dir / (model + ".onnx"), json = dir / (model + ".json"),
                   plan = dir / (model + ".plan.json");
    if (!fs::exists(onnx)) {
      const std::string command = "/usr/bin/python3 '" + script.string() + "' '" + dir.string() +
                                  "' --only " + model + " >/dev/null 2>&1";
      if (std::system(command.c_str()) != 0) {
        fmt::print("{:<20} export failed\n", model);
        continue;
      }
    }
    const std::string cli = UNITY_CLI_PATH;
    const auto imported =
        measure(fmt::format("'{}' import '{}' --batch {} -o '{}' 2>/dev/null >/dev/null", cli,
                            onnx.string(), batch, json.string()));
    if (imported.exit_code != 0) {
      fmt::print("{:<20} import failed (exit {})\n", model, imported.exit_code);
      continue;
    }
    const auto planned = measure(fmt::format(
        "'{}' optimize '{}' --machine summit --nodes {} --mode joint --out '{}' >/dev/null "
        "2>/dev/null",
        cli, json.string(), nodes, plan.string()));
    if (planned.exit_code != 0) {
      fmt::print("{:<20} optimize failed (exit {}) after {:.1f} s\n", model, planned.exit_code,
                 planned.seconds);
      ++over;
      continue;
    }
    const auto j = nlohmann::json::parse(read_file(plan));
    const auto& s = j.at("summary");
    const bool within = planned.seconds < 60 && planned.peak_mb < 2048;
    if (!within) ++over;
    fmt::print("{:<20} {:>6} {:>12} {:>8.1f} {:>9.0f} {:>12.2f}  {}{}\n", model,
               s.value("operators", 0), s.value("search_status", std::string{}), planned.seconds,
               planned.peak_mb, s.value("iteration_time_ms", 0.0),
               s.value("origin", std::string{}).empty() ? "joint search"
                                                        : s.value("origin", std::string{}),
               within ? "" : "  (over 60 s or 2 GB)");
  }
  if (temporary) fs::remove_all(dir);
  fmt::print("{} of {} models over 60 s or 2 GB\n", over, models.size());
  return 0;
}
