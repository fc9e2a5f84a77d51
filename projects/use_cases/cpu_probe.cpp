#include "unity/use_cases/cpu_probe.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/use_cases/calibrate.h"

namespace unity::use_cases {
namespace {

namespace fs = std::filesystem;

// Bump when the probe measures differently: older files are measured again.
constexpr int kProbeVersion = 10;  // 10: the depthwise convolution's rate
constexpr const char* kFormat = "unity-cpu-probe";
// Seconds per measurement: each still repeats at least three times (executor/calibration.cpp).
constexpr double kProbeSeconds = 0.05;
// The start of a probed machine's source, which cpu_figures_of recognises.
constexpr const char* kProbedSource = "measured on this machine ";
constexpr const char* kFailedProbeSource = "nominal: the probe of this machine failed";

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(colon + 1);
    name.erase(0, name.find_first_not_of(" \t"));
    if (!name.empty()) return name;
  }
  return "unknown";
}

// FNV-1a: a stable short name for the CPU model in the file name (std::hash may change).
std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string file_safe(const std::string& text) {
  std::string out;
  for (char c : text)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  return out.empty() ? "host" : out;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &tm);
  return text;
}

bool same_cpu(const ThisCpu& a, const ThisCpu& b) {
  return a.host == b.host && a.model == b.model && a.cores == b.cores;
}

// The kept probe at `file` when it is one for `cpu` and `ranks`; nullopt otherwise (missing,
// malformed, another computer's, an older probe's).
std::optional<CpuProbe> read_kept(const fs::path& file, const ThisCpu& cpu, int ranks) {
  std::error_code ec;
  if (file.empty() || !fs::is_regular_file(file, ec)) return std::nullopt;
  try {
    const nlohmann::json j = read_json_file(file);
    if (j.value("version", 0) != kProbeVersion) return std::nullopt;
    CpuProbe p = cpu_probe_from_json(j);
    if (!same_cpu(p.cpu, cpu) || p.ranks != ranks) return std::nullopt;
    p.file = file;
    p.from_cache = true;
    return p;
  } catch (const std::exception&) {
    return std::nullopt;  // measured again and rewritten
  }
}

// An exclusive lock on `path` for this object's life (none when it cannot be opened): two
// processes planning at once would otherwise measure at once, each disturbing the other.
class FileLock {
 public:
  explicit FileLock(const fs::path& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT, 0644)) {
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~FileLock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

CpuProbe measure_now(const ThisCpu& cpu, int ranks) {
  CalibrateRequest request;
  request.ranks = ranks;
  request.seconds = kProbeSeconds;
  request.quick = true;
  CpuProbe p;
  p.cpu = cpu;
  p.ranks = ranks;
  p.date = utc_now();
  const auto start = std::chrono::steady_clock::now();
  p.calibration = measure_machine(request);
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return p;
}

}  // namespace

ThisCpu this_cpu() {
  ThisCpu c;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) c.host = name;
  if (c.host.empty()) c.host = "localhost";
  c.model = cpu_model_name();
  c.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return c;
}

int probed_ranks(int ranks, const ThisCpu& cpu) {
  return std::clamp(ranks, 1, std::max(1, cpu.cores));
}

nlohmann::json cpu_probe_to_json(const CpuProbe& p) {
  return {{"format", kFormat},
          {"version", kProbeVersion},
          {"host", p.cpu.host},
          {"cpu_model", p.cpu.model},
          {"cores", p.cpu.cores},
          {"ranks", p.ranks},
          {"date", p.date},
          {"seconds", p.seconds},
          {"calibration", executor::calibration_to_json(p.calibration)}};
}

CpuProbe cpu_probe_from_json(const nlohmann::json& j) {
  CpuProbe p;
  try {
    if (j.at("format").get<std::string>() != kFormat)
      throw InputError(fmt::format("not a CPU probe (format '{}')", j.at("format").dump()));
    p.cpu.host = j.at("host").get<std::string>();
    p.cpu.model = j.at("cpu_model").get<std::string>();
    p.cpu.cores = j.at("cores").get<int>();
    p.ranks = j.at("ranks").get<int>();
    p.date = j.at("date").get<std::string>();
    p.seconds = j.value("seconds", 0.0);
    p.calibration = executor::calibration_from_json(j.at("calibration"));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("CPU probe is malformed: {}", e.what()));
  }
  if (p.ranks < 1 || p.cpu.cores < 1 || p.calibration.gemm_flops <= 0 ||
      p.calibration.memory_bandwidth <= 0 || p.calibration.launch_latency < 0)
    throw InputError("CPU probe is malformed: ranks, cores and measured rates must be positive");
  return p;
}

fs::path cpu_probe_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return fs::path(xdg) / "unity";
  const char* home = std::getenv("HOME");
  if (home && *home) return fs::path(home) / ".cache" / "unity";
  return {};
}

fs::path cpu_probe_file(const ThisCpu& cpu, int ranks) {
  const fs::path dir = cpu_probe_cache_dir();
  if (dir.empty()) return {};
  return dir / fmt::format("cpu-local-{}-{}-cores-{:08x}-{}-ranks.json", file_safe(cpu.host),
                           cpu.cores, fnv1a(cpu.model) & 0xffffffffu, ranks);
}

CpuProbe cpu_probe(int ranks) {
  const ThisCpu cpu = this_cpu();
  const int measured = probed_ranks(ranks, cpu);
  const fs::path file = cpu_probe_file(cpu, measured);
  if (auto kept = read_kept(file, cpu, measured)) return *kept;
  std::error_code ec;
  if (!file.empty()) fs::create_directories(file.parent_path(), ec);
  const bool can_keep = !file.empty() && !ec;
  std::optional<FileLock> lock;
  if (can_keep) {
    lock.emplace(file.parent_path() / "cpu-local-probe.lock");
    // Another process may have measured while this one waited.
    if (auto kept = read_kept(file, cpu, measured)) return *kept;
  }
  CpuProbe p = measure_now(cpu, measured);
  if (can_keep) {
    try {
      write_text_file_atomic(file, cpu_probe_to_json(p).dump(2) + "\n");
      p.file = file;
    } catch (const std::exception&) {
      // A read-only cache: this process uses the figures; the next one measures again.
    }
  }
  return p;
}

MachineSpec probed_cpu_local(const CpuProbe& probe, const MachineSelection& selection) {
  const executor::Calibration& c = probe.calibration;
  const MachineSpec measured = executor::calibrated_machine(c);
  MachineSpec m = load_machine("cpu-local", selection);
  // Ranks beyond the measured ones (more than the cores) take turns on the cores: rates shrink
  // and times per operator and per GELU value grow by the share a rank gets.
  const double share = std::min(1.0, static_cast<double>(probe.ranks) / m.num_devices());
  const DeviceSpec& rate = measured.device_types.at(0);
  for (DeviceSpec& d : m.device_types) {
    d.peak_flops_fp32 = rate.peak_flops_fp32 * share;
    d.peak_flops_fp16 = rate.peak_flops_fp16 * share;
    d.peak_flops_bf16 = 0;  // the fp16 figure
    d.memory_bandwidth = rate.memory_bandwidth * share;
    d.compute_efficiency = rate.compute_efficiency;
    d.memory_efficiency = rate.memory_efficiency;
    d.launch_latency = rate.launch_latency / share;
    d.skips_data_gradients = rate.skips_data_gradients;
    d.lowers_convolutions_through_memory = rate.lowers_convolutions_through_memory;
    d.transcendental_seconds = rate.transcendental_seconds / share;
    d.erf_seconds = rate.erf_seconds / share;
    d.depthwise_mac_seconds = rate.depthwise_mac_seconds / share;
    d.gemm_rates = rate.gemm_rates;
    for (auto& [flops, r] : d.gemm_rates) r *= share;
    d.update_rates = rate.update_rates;
    for (auto& [name, curve] : d.update_rates)
      for (auto& [parameters, seconds] : curve) seconds /= share;
  }
  if (c.links_measured) {
    m.intra_island = measured.intra_island;
    m.intra_island.bandwidth *= share;
    m.inter_island = m.intra_island;
  }
  m.source = fmt::format(
      "{}{} by a quick probe with {} rank{} at once ({:.2f} s{}): GEMM {:.1f} GFLOP/s per rank, "
      "streaming {:.2f} GB/s per rank, {:.2f} us per operator, {:.1f} ns per sigmoid and {:.1f} "
      "per GELU value{}{}",
      kProbedSource, probe.date, probe.ranks, probe.ranks == 1 ? "" : "s", probe.seconds,
      probe.file.empty() ? ", not kept" : ", kept in " + probe.file.string(), c.gemm_flops * 1e-9,
      c.memory_bandwidth * 1e-9, c.launch_latency * 1e6, c.transcendental_seconds * 1e9,
      c.erf_seconds * 1e9,
      c.links_measured ? fmt::format(", all-reduce link {:.2f} GB/s and {:.2f} us",
                                     c.link_bandwidth * 1e-9, c.link_latency * 1e6)
                       : std::string(", links the preset's (one rank)"),
      share < 1 ? fmt::format("; {} ranks share {} cores: {:.3g} of each figure a rank",
                              m.num_devices(), probe.ranks, share)
                : std::string());
  validate_machine(m);
  return m;
}

bool cpu_local_nominal_requested() {
  const char* v = std::getenv("UNITY_CPU_LOCAL");
  const std::string value = v ? v : "";
  if (value == "nominal") return true;
  if (value.empty() || value == "probe") return false;
  throw InputError(fmt::format(
      "UNITY_CPU_LOCAL='{}': expected 'nominal' (cpu-local's shipped figures) or 'probe' (this "
      "computer's, measured once and kept; the default)",
      value));
}

std::optional<CpuFigures> cpu_figures_of(const MachineSpec& machine) {
  if (machine.name.rfind("cpu-local-calibrated", 0) == 0) return CpuFigures::Calibrated;
  if (machine.name != "cpu-local") return std::nullopt;
  if (machine.source.rfind(kProbedSource, 0) == 0) return CpuFigures::Probed;
  return CpuFigures::Nominal;
}

std::string describe_cpu_figures(const MachineSpec& machine) {
  const auto figures = cpu_figures_of(machine);
  if (!figures) return {};
  switch (*figures) {
    case CpuFigures::Probed:
      return machine.source;
    case CpuFigures::Calibrated:
      return fmt::format("calibrated: {}", machine.source);
    case CpuFigures::Nominal:
      break;
  }
  if (machine.source.rfind(kFailedProbeSource, 0) == 0) return machine.source;
  return "nominal: cpu-local's shipped per-core figures (UNITY_CPU_LOCAL=nominal), not this "
         "computer's";
}

std::string failed_probe_source(const std::string& why) {
  return fmt::format("{} ({}), so cpu-local's shipped per-core figures", kFailedProbeSource, why);
}

}  // namespace unity::use_cases
