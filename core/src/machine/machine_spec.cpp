// The machine's topology queries. Devices are numbered node by node, island by island inside a
// node, so a device's node and island follow from its index alone.
#include <stdexcept>

#include <fmt/format.h>

#include "unity/core/machine/machine_spec.h"

namespace unity {

double DeviceSpec::peak_flops(DataType dtype) const {
  switch (dtype) {
    case DataType::BFloat16:
      if (peak_flops_bf16 > 0) return peak_flops_bf16;
      [[fallthrough]];
    case DataType::Float16:
      return peak_flops_fp16 > 0 ? peak_flops_fp16 : peak_flops_fp32;
    default:
      return peak_flops_fp32;
  }
}
namespace {

void check_device(const MachineSpec& m, int d) {
  // A bad index is a bug in the caller (the cost model, a mapping), not bad user input.
  if (d < 0 || d >= m.num_devices())
    throw std::out_of_range(
        fmt::format("machine '{}': device {} out of range [0, {})", m.name, d, m.num_devices()));
}

}  // namespace

int MachineSpec::island_size() const {
  return devices_per_island > 0 ? devices_per_island : devices_per_node;
}

int MachineSpec::islands_per_node() const { return devices_per_node / island_size(); }

int MachineSpec::island_of(int d) const {
  check_device(*this, d);
  return node_of(d) * islands_per_node() + (d % devices_per_node) / island_size();
}

const DeviceSpec& MachineSpec::device(int d) const {
  check_device(*this, d);
  if (node_device_type.empty()) return device_types.at(0);
  return device_types.at(node_device_type.at(node_of(d)));
}

const LinkSpec& MachineSpec::link(int a, int b) const {
  check_device(*this, a);
  check_device(*this, b);
  if (pod_of(a) != pod_of(b)) return inter_pod;
  if (node_of(a) != node_of(b)) return inter_node;
  if (island_of(a) != island_of(b)) return inter_island;
  // Also a == b: callers should not cost a copy to itself, and the fastest link is the safe answer.
  return intra_island;
}

}  // namespace unity
