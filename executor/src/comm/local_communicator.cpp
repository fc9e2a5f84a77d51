// The communicator of a one-rank run: every group is {0}, so collectives copy or do nothing.
#include <cstring>
#include <stdexcept>

#include "unity/executor/communicator.h"

namespace unity::executor {
namespace {

class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "local"; }
  void prepare_groups(const std::vector<std::vector<int>>&) override {}
  void exchange(const std::vector<Message>& sends, const std::vector<Message>& receives,
                int) override {
    if (!sends.empty() || !receives.empty())
      throw std::logic_error("a one-rank run has nobody to exchange messages with");
  }
  void all_reduce(const std::vector<int>&, float*, std::int64_t) override {}
  void reduce_scatter(const std::vector<int>&, const float* send, float* recv,
                      std::int64_t count) override {
    if (send != recv) std::memcpy(recv, send, static_cast<std::size_t>(count) * sizeof(float));
  }
  void all_gather(const std::vector<int>&, const float* send, float* recv,
                  std::int64_t count) override {
    if (send != recv) std::memcpy(recv, send, static_cast<std::size_t>(count) * sizeof(float));
  }
  std::vector<double> all_gather_host(const std::vector<double>& mine) override { return mine; }
  void barrier() override {}
};

}  // namespace

std::unique_ptr<Communicator> make_local_communicator() {
  return std::make_unique<LocalCommunicator>();
}

}  // namespace unity::executor
