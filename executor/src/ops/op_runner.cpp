#include "op_runner.h"

#include <fmt/format.h>

#include "../runtime/synthetic_data.h"
#include "kernel_registry.h"
#include "op_helpers.h"
#include "unity/core/pcg/graph_builder.h"

namespace unity::executor::detail {

FusedActivation::FusedActivation(const Operator& op) {
  const Activation a = activation_from_string(op.attrs.get_string("activation", "none"));
  none_ = a == Activation::None;
  switch (a) {
    case Activation::Relu:
      kind_ = UnaryKind::Relu;
      break;
    case Activation::Gelu:
      kind_ = UnaryKind::Gelu;
      break;
    case Activation::Sigmoid:
      kind_ = UnaryKind::Sigmoid;
      break;
    case Activation::Tanh:
      kind_ = UnaryKind::Tanh;
      break;
    default:
      kind_ = UnaryKind::Identity;
  }
}

void FusedActivation::forward(DeviceBackend& be, float* y, float* saved, i64 n) const {
  if (none_) return;
  if (needs_input()) {
    be.copy(saved, y, static_cast<std::size_t>(n) * sizeof(float));
    be.unary(kind_, 0, saved, y, n);
  } else {
    be.unary(kind_, 0, y, y, n);
  }
}

const float* FusedActivation::backward(DeviceBackend& be, const float* y, const float* saved,
                                       const float* dy, float* dz, i64 n) const {
  if (none_) return dy;
  be.fill_zero(dz, static_cast<std::size_t>(n) * sizeof(float));
  be.unary_backward(kind_, 0, saved, y, dy, dz, n);
  return dz;
}

std::uint64_t node_seed(const StepContext& ctx) {
  const std::string key =
      ctx.node.op.name.empty() ? "node " + std::to_string(ctx.node.id) : ctx.node.op.name;
  return hash_combine(hash_combine(ctx.seed, hash_string(key)),
                      static_cast<std::uint64_t>(ctx.iteration));
}

DropoutSpec global_numbering(const StepContext& ctx, const Slot& out) {
  DropoutSpec s;
  s.seed = node_seed(ctx);
  s.global_shape = ctx.node.outputs.at(0).sizes();
  s.origin = out.region.begin;
  s.local_shape = out.shape;
  if (ctx.global_batch > 0 && !s.global_shape.empty() &&
      s.global_shape[0] == ctx.program.graph.batch_size) {
    s.global_shape[0] = ctx.global_batch;
    s.origin[0] += ctx.batch_offset;
  }
  return s;
}

std::unique_ptr<OpRunner> make_op_runner(const Graph& g, const Node& n) {
  if (const RunnerFactory factory = registered_kernel(n.op.type)) return factory(g, n);
  throw LoweringError(fmt::format("{}: no kernel for {}", g.describe(n.id), to_string(n.op.type)));
}

}  // namespace unity::executor::detail
