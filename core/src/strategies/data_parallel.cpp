#include "unity/core/data_parallel.h"

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity {

Graph make_data_parallel(const Graph& serial, int degree) {
  return make_data_parallel(serial, degree, {});
}

Graph make_data_parallel(const Graph& serial, int degree, const std::set<NodeId>& also_batched) {
  if (degree < 1) throw InputError(fmt::format("data parallelism needs at least 1 device, got {}", degree));
  Graph g = serial;
  if (degree == 1) return g;
  std::int64_t batch = serial.batch_size;
  if (batch <= 0) {
    for (const auto& [id, n] : serial.nodes())
      if (n.op.type == OpType::Input && !n.outputs.empty() && n.outputs[0].rank() > 0) {
        batch = n.outputs[0].dims[0].size;
        break;
      }
  }
  for (const auto& [id, n] : serial.nodes()) {
    if (!is_source_op(n.op.type)) continue;
    const auto& s = n.outputs.at(0);
    const bool batched = n.op.type == OpType::Input && s.rank() > 0 &&
                         (s.dims[0].size == batch || also_batched.count(id));
    if (batched && s.dims[0].size % degree != 0)
      throw InputError(fmt::format("batch {} of '{}' is not divisible by {} devices",
                                   s.dims[0].size, n.op.name, degree));
    Operator op;
    if (batched) {
      op = Operator{OpType::Partition,
                    {{"dim", std::int64_t{0}}, {"degree", std::int64_t{degree}}},
                    n.op.name + ".partition"};
    } else {
      op = Operator{OpType::Replicate, {{"degree", std::int64_t{degree}}}, n.op.name + ".replicate"};
    }
    const TensorRef src{id, 0};
    const auto users = g.uses(src);
    if (users.empty()) continue;
    const NodeId par = g.add(op, {src});
    for (const auto& u : users) g.set_input(u.node, u.slot, {par, 0});
  }
  try {
    g.infer_shapes();
  } catch (const ShapeError& e) {
    throw InputError(fmt::format("'{}' cannot be trained data-parallel on {} devices: {}",
                                 serial.name, degree, e.what()));
  }
  return g;
}

}  // namespace unity
