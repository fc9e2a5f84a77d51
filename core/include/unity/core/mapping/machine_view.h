#pragma once
// Machine views (paper 3.2): where each task of an operator runs. An operator whose output has
// parallel degrees d1..dn (replica degree last) has d1*...*dn tasks, indexed row-major; a view maps
// task (i1..in) to device start + sum(ik * stride_k). Only views that keep each dimension's tasks
// on evenly strided devices are enumerated, which keeps the count linear in the number of devices.
#include <string>
#include <vector>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/shapes/parallel_tensor_shape.h"

namespace unity {

// A contiguous range of devices that a subproblem may use.
struct DeviceBlock {
  int start = 0;
  int size = 0;
  bool operator==(const DeviceBlock&) const = default;
};

struct MachineView {
  int start = 0;
  std::vector<int> extents;  // task-grid extents (the degrees > 1, in tensor order, replica last)
  std::vector<int> strides;  // device stride of each extent

  int num_tasks() const;
  int device(int task) const;  // task: row-major index over the extents
  std::vector<int> devices() const;
  std::string to_string() const;
  bool operator==(const MachineView&) const = default;
};

// The task grid of an operator: the degrees > 1 of its output's dims, then its replica degree.
std::vector<int> task_extents(const ParallelTensorShape& output);

// Every view of a task grid inside a block: for each order of the grid's dimensions (which one is
// innermost, i.e. on neighbouring devices, and which spans islands or nodes), the tasks either
// packed on consecutive devices (at every aligned start) or spread with a stride (at every start
// offset). Empty when the grid has more tasks than the block has devices. With `align` > 1 a grid
// starts only at multiples of `align` from the block's start: the mapping DP passes the node size
// in blocks of several nodes, where a small grid's place inside a node matters little and every
// start would multiply the DP's work by the node count (side-by-side divisions still place it
// anywhere).
std::vector<MachineView> candidate_views(const std::vector<int>& extents, DeviceBlock block,
                                         int align = 1);

}  // namespace unity
