#pragma once
// Worker threads (the search, the run, the layout service) run at a lower priority than the GUI
// thread, so on a loaded machine the scheduler lets the event loop run first and the window stays
// responsive. The price: such a thread can be held off a core for over 100 ms, and whatever it
// holds then is held as long. So the GUI thread never waits for one:
// - it takes a lock it shares with a worker only when it is free (guiLock), leaving the work to its
//   next tick otherwise;
// - it never frees memory a worker allocated while that worker runs: glibc frees a block under the
//   lock of the malloc arena it came from, which the worker holds whenever it allocates (a search
//   view's GUI thread waited 110-140 ms in free() that way). Such memory goes back to its worker.
#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <mutex>

namespace unity::views {

// `m` locked for the GUI thread: at once or not at all (the lock then owns nothing), unless `wait`,
// for a last look once the worker is done with it.
inline std::unique_lock<std::mutex> guiLock(std::mutex& m, bool wait) {
  std::unique_lock lock(m, std::defer_lock);
  if (wait)
    lock.lock();
  else
    (void)lock.try_lock();
  return lock;
}

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
