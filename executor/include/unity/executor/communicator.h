#pragma once
// How ranks talk: point-to-point exchanges of fragments and collectives on groups of ranks. The CPU
// backend uses MPI on host memory; the CUDA backend NCCL on device memory (bootstrapped over MPI).
// Every rank calls the same collectives in the same order (the program is the same everywhere), so
// a group's communicator is just the ordered list of its ranks.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace unity::executor {

class Communicator {
 public:
  struct Message {
    int peer = -1;
    void* data = nullptr;
    std::size_t bytes = 0;
  };

  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;

  // Creates the communicators of `groups` (each an ordered list of ranks). Collective over all
  // ranks: every rank passes the same list; a rank joins the groups it belongs to.
  virtual void prepare_groups(const std::vector<std::vector<int>>& groups) = 0;

  // Posts every send and receive at once and waits for all of them. Messages between one pair of
  // ranks are matched in the order they are listed on both sides.
  virtual void exchange(const std::vector<Message>& sends, const std::vector<Message>& receives,
                        int tag) = 0;
  // Pipelines: a send that returns at once (the buffer must stay untouched until wait_sends()), a
  // receive that waits for its message, and the wait for every send posted since the last one.
  // Messages between two ranks are matched by tag, so each in-flight message needs its own. A rank
  // that only ever waits for data, never for a send, cannot deadlock a schedule whose passes
  // depend on each other without a cycle. The defaults post a whole exchange.
  virtual void send_async(const Message& m, int tag) { exchange({m}, {}, tag); }
  virtual void receive(const Message& m, int tag) { exchange({}, {m}, tag); }
  virtual void wait_sends() {}

  // In-place sum of `count` floats over the ranks of `group` (this rank must be a member).
  virtual void all_reduce(const std::vector<int>& group, float* data, std::int64_t count) = 0;
  // `send` holds group.size() blocks of `count` floats; block i is summed over the group into the
  // `recv` of rank group[i].
  virtual void reduce_scatter(const std::vector<int>& group, const float* send, float* recv,
                              std::int64_t count) = 0;
  // Every member's `count` floats, in group order, into every member's `recv`.
  virtual void all_gather(const std::vector<int>& group, const float* send, float* recv,
                          std::int64_t count) = 0;

  // Control data in host memory over all ranks: everyone's values, rank-major.
  virtual std::vector<double> all_gather_host(const std::vector<double>& mine) = 0;
  virtual void barrier() = 0;
};

// One rank, no MPI: for single-rank runs and the reference of --check.
std::unique_ptr<Communicator> make_local_communicator();

// `n` communicators for `n` threads of this process (host memory): runs a multi-rank program inside
// one process, for tests and quick checks without mpirun. Each must be used by its own thread.
std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int n);

// Ranks `members` of `parent` (this rank among them) as a communicator of their own, rank i being
// members[i]: a pipeline stage replica's devices. Host collectives (all_gather_host, barrier) stay
// with the parent. `parent` must outlive it.
std::unique_ptr<Communicator> make_group_communicator(Communicator& parent,
                                                      std::vector<int> members);

// MPI_COMM_WORLD (MPI must be initialised by the caller; see MpiSession).
std::unique_ptr<Communicator> make_mpi_communicator();

// This process's rank among the ranks on its node (MPI must be initialised): the GPU it uses.
int node_local_rank();

// MPI_Init_thread/MPI_Finalize for the lifetime of the object.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const;
  int size() const;
  // Ends every rank of the job (after a fatal error on this one).
  [[noreturn]] static void abort(int code);
};

}  // namespace unity::executor
