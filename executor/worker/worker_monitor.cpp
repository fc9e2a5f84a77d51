#include "worker_monitor.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "unity/executor/run_files.h"

namespace unity::worker {

namespace {
std::mutex& output_mutex() {
  static std::mutex m;
  return m;
}

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void emit_event(const nlohmann::json& event) {
  std::lock_guard lock(output_mutex());
  const std::string line = std::string(executor::kEventPrefix) + event.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

const char* phase_name(executor::ProgressMonitor::Phase p) {
  using P = executor::ProgressMonitor::Phase;
  switch (p) {
    case P::Setup:
      return "setup";
    case P::Forward:
      return "forward";
    case P::Backward:
      return "backward";
    case P::GradientSync:
      return "gradient synchronisation";
    case P::Update:
      return "optimizer update";
    case P::Report:
      return "reporting";
  }
  return "?";
}

Watchdog::Watchdog(int rank, double timeout_seconds, Describe describe)
    : rank_(rank), timeout_(timeout_seconds), describe_(std::move(describe)) {
  touch();
  if (timeout_ > 0) thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Watchdog::touch() { last_progress_ns_ = now_ns(); }

void Watchdog::at(int iteration, Phase phase, NodeId node) {
  iteration_ = iteration;
  phase_ = static_cast<int>(phase);
  node_ = node;
  touch();
}

void Watchdog::enter_wait(std::string what) {
  std::lock_guard lock(mutex_);
  waiting_ = std::move(what);
}

void Watchdog::leave_wait() {
  {
    std::lock_guard lock(mutex_);
    waiting_.clear();
  }
  touch();
}

void Watchdog::run() {
  while (!stop_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const double idle = static_cast<double>(now_ns() - last_progress_ns_.load()) * 1e-9;
    if (idle < timeout_) continue;
    std::string waiting;
    {
      std::lock_guard lock(mutex_);
      waiting = waiting_;
    }
    const auto phase = static_cast<Phase>(phase_.load());
    const NodeId node = node_.load();
    nlohmann::json e = {{"event", "timeout"},
                        {"rank", rank_},
                        {"seconds", timeout_},
                        {"iteration", iteration_.load()},
                        {"phase", phase_name(phase)},
                        {"waiting", waiting},
                        {"where", node >= 0 ? describe_(node) : std::string()}};
    emit_event(e);
    // Let the other ranks' watchdogs report too before mpirun tears the job down.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    std::fflush(nullptr);
    _exit(3);
  }
}

namespace {

std::string ranks_text(const std::vector<int>& group) {
  return fmt::format("[{}]", fmt::join(group, ","));
}

class MonitoredCommunicator final : public executor::Communicator {
 public:
  MonitoredCommunicator(std::unique_ptr<Communicator> inner, Watchdog& dog)
      : inner_(std::move(inner)), dog_(dog) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string name() const override { return inner_->name(); }
  void prepare_groups(const std::vector<std::vector<int>>& groups) override {
    Scope s(dog_, "creating communicators");
    inner_->prepare_groups(groups);
  }
  void exchange(const std::vector<Message>& sends, const std::vector<Message>& receives,
                int tag) override {
    std::vector<int> from, to;
    for (const auto& m : receives) from.push_back(m.peer);
    for (const auto& m : sends) to.push_back(m.peer);
    Scope s(dog_,
            fmt::format("point-to-point exchange (receiving from ranks {}, sending to ranks {})",
                        ranks_text(from), ranks_text(to)));
    inner_->exchange(sends, receives, tag);
  }
  void send_async(const Message& m, int tag) override { inner_->send_async(m, tag); }
  void receive(const Message& m, int tag) override {
    Scope s(dog_, fmt::format("receive of {} bytes from rank {}", m.bytes, m.peer));
    inner_->receive(m, tag);
  }
  void wait_sends() override {
    Scope s(dog_, "completion of its point-to-point sends");
    inner_->wait_sends();
  }
  void all_reduce(const std::vector<int>& group, float* data, std::int64_t count) override {
    Scope s(dog_, fmt::format("all-reduce of {} values with ranks {}", count, ranks_text(group)));
    inner_->all_reduce(group, data, count);
  }
  void reduce_scatter(const std::vector<int>& group, const float* send, float* recv,
                      std::int64_t count) override {
    Scope s(dog_, fmt::format("reduce-scatter with ranks {}", ranks_text(group)));
    inner_->reduce_scatter(group, send, recv, count);
  }
  void all_gather(const std::vector<int>& group, const float* send, float* recv,
                  std::int64_t count) override {
    Scope s(dog_, fmt::format("all-gather with ranks {}", ranks_text(group)));
    inner_->all_gather(group, send, recv, count);
  }
  std::vector<double> all_gather_host(const std::vector<double>& mine) override {
    Scope s(dog_, "all-gather of the iteration's loss and time with every rank");
    return inner_->all_gather_host(mine);
  }
  void barrier() override {
    Scope s(dog_, "barrier with every rank");
    inner_->barrier();
  }

 private:
  struct Scope {
    Scope(Watchdog& d, std::string what) : dog(d) { dog.enter_wait(std::move(what)); }
    ~Scope() { dog.leave_wait(); }
    Watchdog& dog;
  };
  std::unique_ptr<Communicator> inner_;
  Watchdog& dog_;
};

}  // namespace

std::unique_ptr<executor::Communicator> monitored(std::unique_ptr<executor::Communicator> inner,
                                                  Watchdog& dog) {
  return std::make_unique<MonitoredCommunicator>(std::move(inner), dog);
}

}  // namespace unity::worker
