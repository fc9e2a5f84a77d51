// Pad, GatherND and ScatterND on the host: a task's buffers are copied to host memory, computed by
// the core's kernels (unity/core/ops/pad_kernels.h, which the rule evaluator runs too) and copied
// back. A task's padded dims and indexed dims are whole (shape inference), so pads and index
// values are the task's own. Backward: Pad's dy cropped (constant) or scatter-added to the
// reflected and edge sources; GatherND scatter-adds dy into d(data); ScatterND passes dy less the
// written positions to d(data) (all of it with add) and gathers d(updates).
#include <fmt/format.h>

#include "kernel_registry.h"
#include "op_helpers.h"
#include "unity/core/ops/pad_kernels.h"

namespace unity::executor::detail {
namespace {

namespace pk = pad_kernels;
using PadInts = std::vector<std::int64_t>;

class PadNdRunner final : public OpRunner {
 public:
  PadNdRunner(const Graph&, const Node& n) : type_(n.op.type), attrs_(n.op.attrs) {
    if (type_ == OpType::Pad) {
      pads_ = attrs_.get_ints("pads");
      pk::pad_mode_of(attrs_.get_string("mode", "constant"), mode_);
    }
    batch_dims_ = static_cast<int>(attrs_.get_int("batch_dims", 0));
    pk::scatter_reduction_of(attrs_.get_string("reduction", "none"), reduction_);
  }

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      // Integer data (8-byte elements) moves like float data, without gradients.
      if (t.in[0]->elem_size == 8)
        forward_task<std::int64_t>(ctx, t);
      else
        forward_task<float>(ctx, t);
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (auto& t : tasks) {
      if (!t.out[0]->grad) continue;
      const Slot& x = *t.in[0];
      Slot* u = type_ == OpType::ScatterND ? t.in[2] : nullptr;
      if (!x.grad && !(u && u->grad)) continue;
      const auto dy = host_copy(be, t.out[0]->grad, t.out[0]->elements());
      std::vector<float> dx, du;
      if (x.grad) dx = host_copy(be, x.grad, x.elements());
      if (u && u->grad) du = host_copy(be, u->grad, u->elements());
      if (type_ == OpType::Pad) {
        pk::pad_backward(dy.data(), x.shape, pads_, mode_, dx.data());
      } else {
        const pk::NdLayout L = layout(ctx, be, t);
        if (type_ == OpType::GatherND)
          pk::gather_nd_backward(dy.data(), L, dx.data());
        else {
          // Only mul reads the values: y is data times the updates written.
          const bool mul = reduction_ == pk::ScatterReduction::Mul;
          const auto data = mul ? host_copy(be, x.value, x.elements()) : std::vector<float>{};
          const auto upd = mul ? host_copy(be, u->value, u->elements()) : std::vector<float>{};
          pk::scatter_nd_backward(dy.data(), data.data(), upd.data(), x.elements(), L, reduction_,
                                  x.grad ? dx.data() : nullptr, u->grad ? du.data() : nullptr);
        }
      }
      if (x.grad) upload(be, x.grad, dx);
      if (u && u->grad) upload(be, u->grad, du);
    }
  }

 private:
  template <typename T>
  static std::vector<T> fetch(DeviceBackend& be, const Slot& s) {
    std::vector<T> v(static_cast<std::size_t>(s.elements()));
    be.to_host(v.data(), s.value, v.size() * sizeof(T));
    return v;
  }

  template <typename T>
  void forward_task(StepContext& ctx, TaskBuffers& t) const {
    DeviceBackend& be = ctx.backend;
    const Slot& x = *t.in[0];
    const auto data = fetch<T>(be, x);
    std::vector<T> out(static_cast<std::size_t>(t.out[0]->elements()));
    if (type_ == OpType::Pad) {
      pk::pad(data.data(), x.shape, pads_, mode_, static_cast<T>(attrs_.get_double("value", 0.0)),
              out.data());
    } else {
      const pk::NdLayout L = layout(ctx, be, t);
      if (type_ == OpType::GatherND)
        pk::gather_nd(data.data(), L, out.data());
      else
        pk::scatter_nd(data.data(), x.elements(), fetch<T>(be, *t.in[2]).data(), L, reduction_,
                       out.data());
    }
    be.to_device(t.out[0]->value, out.data(), out.size() * sizeof(T));
  }

  pk::NdLayout layout(const StepContext& ctx, DeviceBackend& be, const TaskBuffers& t) const {
    const PadInts idx = host_ints(be, *t.in[1]);
    pk::NdLayout L = pk::nd_layout(t.in[0]->shape, idx.data(), t.in[1]->shape,
                                   type_ == OpType::GatherND ? batch_dims_ : 0);
    if (!L.ok)
      throw InputError(fmt::format("{}: an index tuple lies outside the data {}",
                                   ctx.program.graph.describe(ctx.node.id),
                                   fmt::join(t.in[0]->shape, "x")));
    return L;
  }

  OpType type_;
  Attributes attrs_;
  std::vector<std::int64_t> pads_;
  pk::PadMode mode_ = pk::PadMode::Constant;
  int batch_dims_ = 0;
  pk::ScatterReduction reduction_ = pk::ScatterReduction::None;
};

}  // namespace

static std::unique_ptr<OpRunner> make_pad_nd_runner(const Graph& g, const Node& n) {
  return std::make_unique<PadNdRunner>(g, n);
}

UNITY_REGISTER_KERNEL(make_pad_nd_runner, OpType::Pad, OpType::GatherND, OpType::ScatterND)

}  // namespace unity::executor::detail
