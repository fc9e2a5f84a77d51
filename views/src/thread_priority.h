#pragma once
// Worker threads (the search, the layout service) run at a lower priority than the GUI thread, so
// on a loaded machine the scheduler lets the event loop run first and the window stays responsive.
#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace unity::views {

// Lowers the calling thread's priority by `niceness` (Linux: per-thread nice; elsewhere nothing).
inline void lowerCurrentThreadPriority(int niceness) {
#if defined(__linux__)
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  const int current = getpriority(PRIO_PROCESS, tid);
  (void)setpriority(PRIO_PROCESS, tid, current + niceness);
#else
  (void)niceness;
#endif
}

}  // namespace unity::views
