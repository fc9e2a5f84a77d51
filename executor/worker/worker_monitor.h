#pragma once
// unity-worker's safety net. Every rank runs a watchdog thread: when the main thread makes no
// progress for `timeout` seconds (a hung collective, a peer that died without MPI noticing, a stuck
// kernel) it prints an event naming this rank, where it was and which ranks it was waiting for,
// gives the other ranks a moment to report too, and ends the process so mpirun tears the job down.
// A communicator wrapper tells the watchdog when the rank is waiting for others.
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "unity/executor/communicator.h"
#include "unity/executor/training.h"

namespace unity::worker {

// Prints `@unity {json}` lines on stdout, one whole line at a time.
void emit_event(const nlohmann::json& event);

class Watchdog final : public executor::ProgressMonitor {
 public:
  using Describe = std::function<std::string(NodeId)>;
  Watchdog(int rank, double timeout_seconds, Describe describe);
  ~Watchdog() override;

  void at(int iteration, Phase phase, NodeId node) override;
  void enter_wait(std::string what);
  void leave_wait();

 private:
  void run();
  void touch();

  int rank_;
  double timeout_;
  Describe describe_;
  std::atomic<int> iteration_{-1};
  std::atomic<int> phase_{0};
  std::atomic<long long> node_{-1};
  std::atomic<long long> last_progress_ns_{0};
  std::mutex mutex_;
  std::string waiting_;  // what this rank waits for, empty when computing
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

const char* phase_name(executor::ProgressMonitor::Phase p);

// Forwards to `inner`, telling the watchdog what the rank is waiting for during each call.
std::unique_ptr<executor::Communicator> monitored(std::unique_ptr<executor::Communicator> inner,
                                                  Watchdog& dog);

}  // namespace unity::worker
