// A communicator over some ranks of another one (a pipeline stage replica's): rank i is
// members[i]; every call translates ranks and goes to the parent. The parent's collectives on
// groups are collective over the group's members only (MPI_Comm_create_group), so replicas prepare
// their groups independently.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "unity/executor/communicator.h"

namespace unity::executor {
namespace {

class GroupCommunicator final : public Communicator {
 public:
  GroupCommunicator(Communicator& parent, std::vector<int> members)
      : parent_(parent), members_(std::move(members)) {
    const auto at = std::find(members_.begin(), members_.end(), parent_.rank());
    if (at == members_.end())
      throw std::logic_error(fmt::format("rank {} is not in the group", parent_.rank()));
    rank_ = static_cast<int>(at - members_.begin());
  }
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  std::string name() const override { return parent_.name(); }

  void prepare_groups(const std::vector<std::vector<int>>& groups) override {
    std::vector<std::vector<int>> mapped;
    for (const auto& g : groups) mapped.push_back(world(g));
    parent_.prepare_groups(mapped);
  }
  void exchange(const std::vector<Message>& sends, const std::vector<Message>& receives,
                int tag) override {
    parent_.exchange(world(sends), world(receives), tag);
  }
  void send_async(const Message& m, int tag) override {
    parent_.send_async({members_.at(m.peer), m.data, m.bytes}, tag);
  }
  void receive(const Message& m, int tag) override {
    parent_.receive({members_.at(m.peer), m.data, m.bytes}, tag);
  }
  void wait_sends() override { parent_.wait_sends(); }
  void all_reduce(const std::vector<int>& group, float* data, std::int64_t count) override {
    parent_.all_reduce(world(group), data, count);
  }
  void reduce_scatter(const std::vector<int>& group, const float* send, float* recv,
                      std::int64_t count) override {
    parent_.reduce_scatter(world(group), send, recv, count);
  }
  void all_gather(const std::vector<int>& group, const float* send, float* recv,
                  std::int64_t count) override {
    parent_.all_gather(world(group), send, recv, count);
  }
  std::vector<double> all_gather_host(const std::vector<double>&) override {
    throw std::logic_error("all_gather_host is over every rank; use the parent communicator");
  }
  void barrier() override {
    throw std::logic_error("barrier is over every rank; use the parent communicator");
  }

 private:
  std::vector<int> world(const std::vector<int>& group) const {
    std::vector<int> out;
    for (int r : group) out.push_back(members_.at(r));
    return out;
  }
  std::vector<Message> world(std::vector<Message> messages) const {
    for (auto& m : messages) m.peer = members_.at(m.peer);
    return messages;
  }

  Communicator& parent_;
  std::vector<int> members_;
  int rank_ = 0;
};

}  // namespace

std::unique_ptr<Communicator> make_group_communicator(Communicator& parent,
                                                      std::vector<int> members) {
  return std::make_unique<GroupCommunicator>(parent, std::move(members));
}

}  // namespace unity::executor
