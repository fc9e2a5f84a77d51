// NCCL on the CUDA backend's stream, bootstrapped over MPI: rank 0 makes the unique id and
// broadcasts it; each group's communicator is split from the world one (ncclCommSplit, collective
// over the world, so every rank walks the same list of groups). Point-to-point fragments are
// ncclSend/ncclRecv inside one group call. Compiled only in CUDA builds.
#if defined(UNITY_HAVE_CUDA)
#include <mpi.h>
#include <nccl.h>

#include <deque>
#include <map>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "../kernels/cuda/cuda_backend.h"
#include "unity/executor/cuda_runtime.h"

namespace unity::executor {
namespace {

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess)
    throw std::runtime_error(fmt::format("{} failed: {}", what, ncclGetErrorString(r)));
}

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(cuda::CudaBackend& device) : device_(device) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    ncclUniqueId id;
    if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    cuda::check(cudaSetDevice(device_.device()), "cudaSetDevice");
    check_nccl(ncclCommInitRank(&world_, size_, id, rank_), "ncclCommInitRank");
  }
  ~NcclCommunicator() override {
    for (auto& [g, c] : comms_) ncclCommDestroy(c);
    if (world_) ncclCommDestroy(world_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "nccl"; }

  void prepare_groups(const std::vector<std::vector<int>>& groups) override {
    for (const auto& g : groups) {
      if (g.size() < 2 || comms_.count(g)) continue;
      int key = -1;
      for (std::size_t i = 0; i < g.size(); ++i)
        if (g[i] == rank_) key = static_cast<int>(i);
      ncclComm_t comm = nullptr;
      check_nccl(ncclCommSplit(world_, key >= 0 ? 0 : NCCL_SPLIT_NOCOLOR, key >= 0 ? key : 0, &comm,
                               nullptr),
                 "ncclCommSplit");
      if (key >= 0) comms_[g] = comm;
    }
  }

  void exchange(const std::vector<Message>& sends, const std::vector<Message>& receives,
                int) override {
    if (sends.empty() && receives.empty()) return;
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (const auto& m : receives)
      check_nccl(ncclRecv(m.data, m.bytes, ncclInt8, m.peer, world_, device_.stream()), "ncclRecv");
    for (const auto& m : sends)
      check_nccl(ncclSend(m.data, m.bytes, ncclInt8, m.peer, world_, device_.stream()), "ncclSend");
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  }

  // Pipelines go through host memory and MPI: an NCCL send would hold the stream until its peer
  // receives, and the next pass's kernels queue behind it (Megatron-LM batches each send with the
  // receive that follows instead).
  void send_async(const Message& m, int tag) override {
    auto& host = staged_.emplace_back(m.bytes);
    device_.to_host(host.data(), m.data, m.bytes);
    MPI_Request r;
    MPI_Isend(host.data(), static_cast<int>(m.bytes), MPI_BYTE, m.peer, tag % 32000, MPI_COMM_WORLD,
              &r);
    pending_.push_back(r);
  }
  void receive(const Message& m, int tag) override {
    std::vector<char> host(m.bytes);
    MPI_Recv(host.data(), static_cast<int>(m.bytes), MPI_BYTE, m.peer, tag % 32000, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    device_.to_device(m.data, host.data(), m.bytes);
  }
  void wait_sends() override {
    if (!pending_.empty())
      MPI_Waitall(static_cast<int>(pending_.size()), pending_.data(), MPI_STATUSES_IGNORE);
    pending_.clear();
    staged_.clear();
  }

  void all_reduce(const std::vector<int>& group, float* data, std::int64_t count) override {
    if (group.size() < 2) return;
    check_nccl(ncclAllReduce(data, data, static_cast<std::size_t>(count), ncclFloat, ncclSum,
                             comm(group), device_.stream()),
               "ncclAllReduce");
  }

  void reduce_scatter(const std::vector<int>& group, const float* send, float* recv,
                      std::int64_t count) override {
    check_nccl(ncclReduceScatter(send, recv, static_cast<std::size_t>(count), ncclFloat, ncclSum,
                                 comm(group), device_.stream()),
               "ncclReduceScatter");
  }

  void all_gather(const std::vector<int>& group, const float* send, float* recv,
                  std::int64_t count) override {
    check_nccl(ncclAllGather(send, recv, static_cast<std::size_t>(count), ncclFloat, comm(group),
                             device_.stream()),
               "ncclAllGather");
  }

  std::vector<double> all_gather_host(const std::vector<double>& mine) override {
    device_.synchronize();
    std::vector<double> all(mine.size() * static_cast<std::size_t>(size_));
    MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
                  static_cast<int>(mine.size()), MPI_DOUBLE, MPI_COMM_WORLD);
    return all;
  }

  void barrier() override {
    device_.synchronize();
    MPI_Barrier(MPI_COMM_WORLD);
  }

 private:
  ncclComm_t comm(const std::vector<int>& group) {
    auto it = comms_.find(group);
    if (it == comms_.end())
      throw std::logic_error("no NCCL communicator for this group (not prepared)");
    return it->second;
  }

  cuda::CudaBackend& device_;
  int rank_ = 0, size_ = 1;
  ncclComm_t world_ = nullptr;
  std::map<std::vector<int>, ncclComm_t> comms_;
  std::vector<MPI_Request> pending_;
  std::deque<std::vector<char>> staged_;  // send_async's host copies, until wait_sends()
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(DeviceBackend& device) {
  auto* cuda = dynamic_cast<cuda::CudaBackend*>(&device);
  if (!cuda) throw std::logic_error("NCCL needs the CUDA backend's device");
  return std::make_unique<NcclCommunicator>(*cuda);
}

}  // namespace unity::executor
#endif
