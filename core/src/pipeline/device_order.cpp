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

}  // namespace unity
