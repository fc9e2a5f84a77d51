#pragma once
// Moving a tensor between partitionings with parallel operators, and removing the pairs of parallel
// operators that undo each other. The hierarchical search uses these where it cuts a graph into
// pieces (paper 5.3): the tensor crossing a cut is handed over in one partitioning, and a piece
// whose own result is partitioned differently pays for converting it.
#include <string>
#include <vector>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/graph.h"

namespace unity {

// Adds the parallel operators that turn `from` (replica 1) into `target`'s degrees: per dimension a
// Combine, a Partition, or both, all Combines first so that no intermediate tensor has more pieces
// than either end. Returns `from` when the degrees already agree. Throws ShapeError when `target`
// has a replica degree or sizes differ.
TensorRef convert_layout(Graph& g, TensorRef from, const ParallelTensorShape& target,
                         const std::string& name);

// Removes Combine(Partition(x)) and Partition(Combine(x)) pairs of equal dim and degree whose
// middle tensor nobody else reads, until none is left. Returns how many pairs went.
int cancel_inverse_parallel_ops(Graph& g);

// Degrees worth considering on this machine: those that divide the device count and either divide a
// node (tensor parallelism inside a node) or are whole nodes (data parallelism across nodes). For
// 192 Summit GPUs: 2 3 6 12 24 48 96 192. Sorted, 1 not included.
std::vector<std::int64_t> useful_degrees(const MachineSpec& machine);

// Partitionings (replica 1) of a tensor of these sizes that a cut may hand over: serial; the sample
// dim (0) by each useful degree; any other dim by the useful degrees that fit in a node.
std::vector<ParallelTensorShape> boundary_layouts(const std::vector<std::int64_t>& sizes,
                                                  DataType dtype, const MachineSpec& machine);

// "[64/6, 1024]"-style description of a layout's degrees.
std::string layout_label(const ParallelTensorShape& layout);

}  // namespace unity
