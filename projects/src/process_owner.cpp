#include "process_owner.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace unity::projects::detail {
namespace {

struct ProcStat {
  bool exists = false;
  char state = '?';
  std::int64_t start = 0;
};

ProcStat read_proc_stat(std::int64_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  ProcStat s;
  std::string line;
  if (!in || !std::getline(in, line)) return s;
  s.exists = true;
  // The command name (field 2) is in parentheses and may itself contain spaces and ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return s;
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  for (int index = 3; fields >> field; ++index) {
    if (index == 3) s.state = field.empty() ? '?' : field[0];
    if (index == 22) {
      s.start = std::stoll(field);
      break;
    }
  }
  return s;
}

bool have_proc() {
  static const bool present = std::ifstream("/proc/self/stat").good();
  return present;
}

}  // namespace

ProcessOwner current_process() {
  ProcessOwner owner;
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) == 0) owner.host = name.data();
  owner.pid = ::getpid();
  owner.start = read_proc_stat(owner.pid).start;
  return owner;
}

bool owner_alive(const ProcessOwner& owner) {
  if (owner.pid <= 0 || !have_proc()) return true;  // nothing to tell by
  if (owner.host != current_process().host) return true;
  const ProcStat s = read_proc_stat(owner.pid);
  if (!s.exists) return false;
  if (s.state == 'Z' || s.state == 'X') return false;
  if (owner.start != 0 && s.start != 0 && s.start != owner.start) return false;
  return true;
}

std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  std::array<char, 32> text{};
  std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", text.data(), static_cast<int>(millis));
}

}  // namespace unity::projects::detail
