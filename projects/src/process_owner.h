#pragma once
// Which process owns a 'running' search or run, so that a later open can tell a live one from one
// whose process died (SIGKILL, power loss) and mark it interrupted. A pid alone is not enough: pids
// are reused, so the owner also records its start time (field 22 of /proc/PID/stat, clock ticks
// since boot) and the host name (a project on a shared file system may be written from elsewhere).
#include <cstdint>
#include <string>

namespace unity::projects::detail {

struct ProcessOwner {
  std::string host;
  std::int64_t pid = 0;
  std::int64_t start = 0;  // 0: unknown
};

ProcessOwner current_process();

// False only when the owner certainly is gone: same host, and no such pid, a zombie, or a pid now
// belonging to a process that started at another time. A different host counts as alive.
bool owner_alive(const ProcessOwner& owner);

// UTC wall-clock time as ISO 8601 with milliseconds ("2024-05-01T12:34:56.789Z").
std::string utc_now();

}  // namespace unity::projects::detail
