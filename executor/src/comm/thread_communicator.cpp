// Ranks as threads of one process: messages go through per-pair queues, collectives through a
// rendezvous where every member publishes its buffer, all compute the result from everyone's data,
// and wait for each other again before the buffers may change.
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>

#include "unity/executor/communicator.h"

namespace unity::executor {
namespace {

struct Shared {
  explicit Shared(int n) : size(n), queues(static_cast<std::size_t>(n * n)) {}
  int size;
  std::mutex mutex;
  std::condition_variable changed;
  // queues[src * size + dst]: (tag, bytes)
  std::vector<std::deque<std::pair<int, std::vector<char>>>> queues;

  // A rendezvous per group: generation counter, arrivals, and the members' published pointers.
  struct Rendezvous {
    long generation = 0;
    int arrived = 0;
    std::vector<const void*> published;
  };
  std::map<std::vector<int>, Rendezvous> rendezvous;
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<Shared> shared, int rank)
      : shared_(std::move(shared)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return shared_->size; }
  std::string name() const override { return "threads"; }
  void prepare_groups(const std::vector<std::vector<int>>&) override {}

  void exchange(const std::vector<Message>& sends, const std::vector<Message>& receives,
                int tag) override {
    {
      std::lock_guard lock(shared_->mutex);
      for (const auto& m : sends) {
        const char* p = static_cast<const char*>(m.data);
        shared_->queues[rank_ * shared_->size + m.peer].push_back(
            {tag, std::vector<char>(p, p + m.bytes)});
      }
    }
    shared_->changed.notify_all();
    for (const auto& m : receives) receive(m, tag);
  }

  // Sends are buffered, so they never wait.
  void send_async(const Message& m, int tag) override { exchange({m}, {}, tag); }

  // The first message from the peer with this tag (messages with other tags may overtake).
  void receive(const Message& m, int tag) override {
    std::unique_lock lock(shared_->mutex);
    auto& q = shared_->queues[m.peer * shared_->size + rank_];
    auto match = q.end();
    shared_->changed.wait(lock, [&] {
      match = std::find_if(q.begin(), q.end(), [&](const auto& e) { return e.first == tag; });
      return match != q.end();
    });
    if (match->second.size() != m.bytes)
      throw std::logic_error("thread communicator: message of the wrong size");
    std::memcpy(m.data, match->second.data(), m.bytes);
    q.erase(match);
  }

  void all_reduce(const std::vector<int>& group, float* data, std::int64_t count) override {
    if (group.size() < 2) return;
    std::vector<float> sum(static_cast<std::size_t>(count), 0.0f);
    collective(group, data, [&](const std::vector<const void*>& all) {
      for (const void* p : all) {
        const float* f = static_cast<const float*>(p);
        for (std::int64_t i = 0; i < count; ++i) sum[i] += f[i];
      }
    });
    std::memcpy(data, sum.data(), sum.size() * sizeof(float));
  }

  void reduce_scatter(const std::vector<int>& group, const float* send, float* recv,
                      std::int64_t count) override {
    const int me = position(group);
    std::vector<float> sum(static_cast<std::size_t>(count), 0.0f);
    collective(group, send, [&](const std::vector<const void*>& all) {
      for (const void* p : all) {
        const float* f = static_cast<const float*>(p) + me * count;
        for (std::int64_t i = 0; i < count; ++i) sum[i] += f[i];
      }
    });
    std::memcpy(recv, sum.data(), sum.size() * sizeof(float));
  }

  void all_gather(const std::vector<int>& group, const float* send, float* recv,
                  std::int64_t count) override {
    collective(group, send, [&](const std::vector<const void*>& all) {
      for (std::size_t i = 0; i < all.size(); ++i)
        std::memcpy(recv + i * count, all[i], static_cast<std::size_t>(count) * sizeof(float));
    });
  }

  std::vector<double> all_gather_host(const std::vector<double>& mine) override {
    std::vector<int> everyone;
    for (int r = 0; r < shared_->size; ++r) everyone.push_back(r);
    std::vector<double> out(mine.size() * everyone.size());
    collective(everyone, mine.data(), [&](const std::vector<const void*>& all) {
      for (std::size_t i = 0; i < all.size(); ++i)
        std::memcpy(out.data() + i * mine.size(), all[i], mine.size() * sizeof(double));
    });
    return out;
  }

  void barrier() override {
    std::vector<int> everyone;
    for (int r = 0; r < shared_->size; ++r) everyone.push_back(r);
    collective(everyone, nullptr, [](const std::vector<const void*>&) {});
  }

 private:
  int position(const std::vector<int>& group) const {
    for (std::size_t i = 0; i < group.size(); ++i)
      if (group[i] == rank_) return static_cast<int>(i);
    throw std::logic_error("thread communicator: rank not in group");
  }

  // Publishes `mine`, waits for every member, runs `f` on all members' pointers (in group order),
  // then waits until every member has finished reading.
  template <typename F>
  void collective(const std::vector<int>& group, const void* mine, F f) {
    const int me = position(group);
    std::unique_lock lock(shared_->mutex);
    auto& r = shared_->rendezvous[group];
    if (r.published.size() != group.size()) r.published.assign(group.size(), nullptr);
    // Phase 1: publish.
    const long gen = r.generation;
    r.published[me] = mine;
    if (++r.arrived == static_cast<int>(group.size())) {
      r.arrived = 0;
      ++r.generation;
      shared_->changed.notify_all();
    } else {
      shared_->changed.wait(lock, [&] { return r.generation != gen; });
    }
    std::vector<const void*> all = r.published;
    lock.unlock();
    f(all);
    lock.lock();
    // Phase 2: everyone has read.
    const long gen2 = r.generation;
    if (++r.arrived == static_cast<int>(group.size())) {
      r.arrived = 0;
      ++r.generation;
      shared_->changed.notify_all();
    } else {
      shared_->changed.wait(lock, [&] { return r.generation != gen2; });
    }
  }

  std::shared_ptr<Shared> shared_;
  int rank_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int n) {
  auto shared = std::make_shared<Shared>(n);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < n; ++r) out.push_back(std::make_unique<ThreadCommunicator>(shared, r));
  return out;
}

}  // namespace unity::executor
