#pragma once
// A machine of one device, for costs computed by hand on a device the test describes.
#include "unity/core/machine/machine_spec.h"

namespace unity::testing_machines {

// A device with no efficiency loss and no launch latency, one peak for every float dtype: a
// kernel takes its FLOPs over the peak or its bytes over the bandwidth, as a hand count writes it.
inline DeviceSpec ideal_device(double peak_flops, double memory_bandwidth) {
  DeviceSpec d;
  d.name = "gpu";
  d.peak_flops_fp32 = peak_flops;
  d.peak_flops_fp16 = peak_flops;
  d.memory_bandwidth = memory_bandwidth;
  d.compute_efficiency = 1.0;
  d.memory_efficiency = 1.0;
  d.launch_latency = 0;
  d.memory_bytes = std::int64_t{1} << 34;
  return d;
}

inline MachineSpec one_device_machine(const DeviceSpec& device) {
  MachineSpec m;
  m.name = "one";
  m.num_nodes = 1;
  m.max_nodes = 1;
  m.devices_per_node = 1;
  m.device_types = {device};
  return m;
}

}  // namespace unity::testing_machines
