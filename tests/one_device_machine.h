#pragma once
// A machine of one device, for costs computed by hand on a device the test describes.
#include "unity/core/machine/machine_spec.h"

namespace unity::testing_machines {

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
