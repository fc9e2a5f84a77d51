#include "unity/core/mapping/machine_view.h"

#include <algorithm>
#include <numeric>
#include <set>

#include <fmt/format.h>

namespace unity {

int MachineView::num_tasks() const {
  return std::accumulate(extents.begin(), extents.end(), 1, std::multiplies<>());
}

int MachineView::device(int task) const {
  int d = start;
  for (int i = static_cast<int>(extents.size()) - 1; i >= 0; --i) {
    d += (task % extents[i]) * strides[i];
    task /= extents[i];
  }
  return d;
}

std::vector<int> MachineView::devices() const {
  std::vector<int> out;
  const int n = num_tasks();
  out.reserve(n);
  for (int t = 0; t < n; ++t) out.push_back(device(t));
  return out;
}

std::string MachineView::to_string() const {
  if (extents.empty()) return fmt::format("device {}", start);
  std::string s = fmt::format("start {} grid", start);
  for (std::size_t i = 0; i < extents.size(); ++i)
    s += fmt::format("{}{}s{}", i ? "x" : " ", extents[i], strides[i]);
  return s;
}

std::vector<int> task_extents(const ParallelTensorShape& output) {
  std::vector<int> e;
  for (const auto& d : output.dims)
    if (d.degree > 1) e.push_back(d.degree);
  if (output.replica > 1) e.push_back(output.replica);
  return e;
}

std::vector<MachineView> candidate_views(const std::vector<int>& extents, DeviceBlock block,
                                         int align) {
  align = std::max(align, 1);
  const int tasks = std::accumulate(extents.begin(), extents.end(), 1, std::multiplies<>());
  std::vector<MachineView> out;
  if (tasks > block.size || tasks < 1) return out;
  const int slots = block.size / tasks;  // how many disjoint copies of the grid fit
  std::vector<int> order(extents.size());
  std::iota(order.begin(), order.end(), 0);
  std::set<std::vector<int>> seen;  // views are compared by the devices their tasks land on
  auto add = [&](int start, const std::vector<int>& strides) {
    MachineView v{start, extents, strides};
    if (seen.insert(v.devices()).second) out.push_back(std::move(v));
  };
  do {
    // order[0] is innermost: its tasks sit on neighbouring devices (the same island when it fits).
    std::vector<int> strides(extents.size());
    int s = 1;
    for (int dim : order) {
      strides[dim] = s;
      s *= extents[dim];
    }
    for (int k = 0; k < slots; ++k)
      if (k * tasks % align == 0) add(block.start + k * tasks, strides);
    if (slots > 1) {
      std::vector<int> spread = strides;
      for (auto& x : spread) x *= slots;
      for (int k = 0; k < slots; k += align) add(block.start + k, spread);
    }
  } while (std::next_permutation(order.begin(), order.end()));
  return out;
}

}  // namespace unity
