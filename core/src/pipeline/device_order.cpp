#include "unity/core/pipeline/device_order.h"

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity {

std::string_view to_string(DeviceOrder order) {
  return order == DeviceOrder::DataParallelOutermost ? "tp-pp-dp" : "tp-dp-pp";
}

DeviceOrder device_order_from_string(std::string_view name) {
  for (auto o : {DeviceOrder::PipelineOutermost, DeviceOrder::DataParallelOutermost})
    if (to_string(o) == name) return o;
  throw InputError(fmt::format(
      "unknown device order '{}' (expected tp-dp-pp: the pipeline outermost, as Megatron-LM "
      "orders devices, or tp-pp-dp: the data-parallel copies outermost, as Llama 3 did)",
      name));
}

int PipelineGrid::device(int stage, int copy, int index) const {
  if (order == DeviceOrder::DataParallelOutermost) return (copy * pp + stage) * replica() + index;
  return (stage * dp + copy) * replica() + index;
}

GridPosition PipelineGrid::position(int device) const {
  const int r = device / replica(), index = device % replica();
  if (order == DeviceOrder::DataParallelOutermost) return {r % pp, r / pp, index};
  return {r / dp, r % dp, index};
}

int PipelineGrid::nth_device(int stage, int i) const {
  return device(stage, i / replica(), i % replica());
}

std::vector<int> PipelineGrid::data_parallel_group(int stage) const {
  std::vector<int> g;
  for (int i = 0; i < replica() * dp; i += tp) g.push_back(nth_device(stage, i));
  return g;
}

std::vector<int> PipelineGrid::expert_group(int stage, int ep, int etp) const {
  std::vector<int> g;
  for (int i = 0; i < ep; ++i) g.push_back(nth_device(stage, i * etp));
  return g;
}

std::vector<int> PipelineGrid::expert_data_group(int stage, int held) const {
  std::vector<int> g;
  for (int i = 0; i < replica() * dp; i += held) g.push_back(nth_device(stage, i));
  return g;
}

std::vector<std::vector<int>> PipelineGrid::context_groups(int stage) const {
  std::vector<std::vector<int>> groups(static_cast<std::size_t>(tp));
  for (int j = 0; j < tp; ++j)
    for (int c = 0; c < cp; ++c)
      groups[static_cast<std::size_t>(j)].push_back(device(stage, 0, c * tp + j));
  return groups;
}

}  // namespace unity
