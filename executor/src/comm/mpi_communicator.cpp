// MPI on host memory: non-blocking point-to-point for fragments, and one communicator per group
// (MPI_Comm_create_group, collective over the group only) for the collectives.
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "unity/executor/communicator.h"

namespace unity::executor {
namespace {

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(fmt::format("{} failed: {}", call, std::string(text, length)));
}

// MPI counts are ints: large buffers go in chunks.
constexpr std::int64_t kMaxCount = std::int64_t{1} << 30;

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // Errors come back as codes (and become exceptions naming the call) instead of aborting.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  ~MpiCommunicator() override {
    for (auto& [group, comm] : comms_) MPI_Comm_free(&comm);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }

  void prepare_groups(const std::vector<std::vector<int>>& groups) override {
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int tag = 0;
    for (const auto& g : groups) {
      ++tag;
      if (g.size() < 2 || comms_.count(g)) continue;
      bool member = false;
      for (int r : g) member = member || r == rank_;
      if (!member) continue;
      MPI_Group sub;
      MPI_Group_incl(world, static_cast<int>(g.size()), g.data(), &sub);
      MPI_Comm comm;
      check(MPI_Comm_create_group(MPI_COMM_WORLD, sub, tag, &comm), "MPI_Comm_create_group");
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
      MPI_Group_free(&sub);
      comms_[g] = comm;
    }
    MPI_Group_free(&world);
  }

  void exchange(const std::vector<Message>& sends, const std::vector<Message>& receives,
                int tag) override {
    std::vector<MPI_Request> requests;
    tag = tag % 32000;
    for (const auto& m : receives) post(m, tag, false, requests);
    for (const auto& m : sends) post(m, tag, true, requests);
    if (!requests.empty())
      check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
            "MPI_Waitall");
  }

  void send_async(const Message& m, int tag) override { post(m, tag % 32000, true, pending_); }

  void receive(const Message& m, int tag) override {
    std::vector<MPI_Request> requests;
    post(m, tag % 32000, false, requests);
    check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
          "MPI_Waitall");
  }

  void wait_sends() override {
    if (pending_.empty()) return;
    std::vector<MPI_Request> requests;
    requests.swap(pending_);
    check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
          "MPI_Waitall");
  }

  void all_reduce(const std::vector<int>& group, float* data, std::int64_t count) override {
    if (group.size() < 2) return;
    MPI_Comm c = comm(group);
    for (std::int64_t done = 0; done < count; done += kMaxCount) {
      const int n = static_cast<int>(std::min(count - done, kMaxCount));
      check(MPI_Allreduce(MPI_IN_PLACE, data + done, n, MPI_FLOAT, MPI_SUM, c), "MPI_Allreduce");
    }
  }

  // A ring: n - 1 steps, each sending one block's running sum to the next member and adding its
  // own share to the block received: the bytes the cost model prices (half a ring all-reduce).
  // Open MPI's MPI_Reduce_scatter_block took 0.25 ms for 500 KB over 2 ranks of one machine,
  // three times its all-reduce of as much (0.08); this takes 0.09, its sums included.
  void reduce_scatter(const std::vector<int>& group, const float* send, float* recv,
                      std::int64_t count) override {
    if (count > kMaxCount) throw std::runtime_error("reduce-scatter block larger than 2^30 floats");
    const int n = static_cast<int>(group.size());
    if (n < 2) {
      std::copy(send, send + count, recv);
      return;
    }
    MPI_Comm c = comm(group);
    int me = 0;
    MPI_Comm_rank(c, &me);
    const auto block = [&](int b) {
      return send + static_cast<std::int64_t>((b % n + n) % n) * count;
    };
    const std::size_t elements = static_cast<std::size_t>(count);
    running_.assign(block(me - 1), block(me - 1) + count);
    incoming_.resize(elements);
    for (int step = 0; step < n - 1; ++step) {
      check(MPI_Sendrecv(running_.data(), static_cast<int>(count), MPI_FLOAT, (me + 1) % n, 0,
                         incoming_.data(), static_cast<int>(count), MPI_FLOAT, (me - 1 + n) % n, 0,
                         c, MPI_STATUS_IGNORE),
            "MPI_Sendrecv");
      const float* own = block(me - step - 2);
      for (std::size_t i = 0; i < elements; ++i) running_[i] = incoming_[i] + own[i];
    }
    std::copy(running_.begin(), running_.end(), recv);
  }

  void all_gather(const std::vector<int>& group, const float* send, float* recv,
                  std::int64_t count) override {
    if (count > kMaxCount) throw std::runtime_error("all-gather block larger than 2^30 floats");
    check(MPI_Allgather(send, static_cast<int>(count), MPI_FLOAT, recv, static_cast<int>(count),
                        MPI_FLOAT, comm(group)),
          "MPI_Allgather");
  }

  std::vector<double> all_gather_host(const std::vector<double>& mine) override {
    std::vector<double> all(mine.size() * static_cast<std::size_t>(size_));
    check(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
                        static_cast<int>(mine.size()), MPI_DOUBLE, MPI_COMM_WORLD),
          "MPI_Allgather");
    return all;
  }

  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

 private:
  static void post(const Message& m, int tag, bool send, std::vector<MPI_Request>& requests) {
    auto* p = static_cast<char*>(m.data);
    std::int64_t left = static_cast<std::int64_t>(m.bytes);
    do {
      const int n = static_cast<int>(std::min(left, kMaxCount));
      MPI_Request r;
      if (send)
        check(MPI_Isend(p, n, MPI_BYTE, m.peer, tag, MPI_COMM_WORLD, &r), "MPI_Isend");
      else
        check(MPI_Irecv(p, n, MPI_BYTE, m.peer, tag, MPI_COMM_WORLD, &r), "MPI_Irecv");
      requests.push_back(r);
      p += n;
      left -= n;
    } while (left > 0);
  }

  MPI_Comm comm(const std::vector<int>& group) {
    auto it = comms_.find(group);
    if (it == comms_.end())
      throw std::logic_error(
          fmt::format("no communicator for ranks {} (not prepared)", fmt::join(group, ",")));
    return it->second;
  }

  int rank_ = 0, size_ = 1;
  std::map<std::vector<int>, MPI_Comm> comms_;
  std::vector<MPI_Request> pending_;       // send_async's
  std::vector<float> running_, incoming_;  // a ring reduce-scatter's block sums
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() {
  return std::make_unique<MpiCommunicator>();
}

int node_local_rank() {
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int r = 0;
  MPI_Comm_rank(local, &r);
  MPI_Comm_free(&local);
  return r;
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int provided = 0;
  // FUNNELED: only the main thread calls MPI; the watchdog thread never does.
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

int MpiSession::rank() const {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int MpiSession::size() const {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

void MpiSession::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace unity::executor
