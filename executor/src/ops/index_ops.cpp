// The index operators (TopK, GatherElements, ScatterElements, OneHot, ArgMax, ArgMin) on the
// host: a task's buffers are copied to host memory, computed by the core's index kernels
// (unity/core/ops/index_kernels.h, which the rule evaluator runs too) and copied back. The axis is
// whole in every task (shape inference), so index values are the task's own positions along it.
// Integer outputs (indices) carry no gradient; float outputs scatter or gather theirs back.
#include <fmt/format.h>

#include <cmath>

#include "kernel_registry.h"
#include "op_helpers.h"
#include "unity/core/ops/index_kernels.h"
#include "unity/core/ops/index_operators.h"

namespace unity::executor::detail {
namespace {

namespace ik = index_kernels;
using Ints = std::vector<std::int64_t>;

[[noreturn]] void index_out_of_range(const StepContext& ctx, std::int64_t n) {
  throw InputError(fmt::format("{}: an index lies outside [-{}, {})",
                               ctx.program.graph.describe(ctx.node.id), n, n));
}

class IndexRunner final : public OpRunner {
 public:
  IndexRunner(const Graph& g, const Node& n) : type_(n.op.type), attrs_(n.op.attrs) {
    const int rank = g.shape(n.inputs.at(0)).rank();
    const std::int64_t fallback = type_ == OpType::TopK || type_ == OpType::OneHot ? -1 : 0;
    std::int64_t a = attrs_.get_int("axis", fallback);
    // OneHot's axis counts the output's dims (the new one among them).
    const int axis_rank = type_ == OpType::OneHot ? rank + 1 : rank;
    axis_ = static_cast<int>(a < 0 ? a + axis_rank : a);
  }

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (auto& t : tasks) {
      const Slot& x = *t.in[0];
      switch (type_) {
        case OpType::TopK: {
          const auto xv = host_copy(be, x.value, x.elements());
          std::vector<float> values(static_cast<std::size_t>(t.out[0]->elements()));
          Ints indices(values.size());
          ik::top_k(xv.data(), x.shape, axis_, attrs_.get_int("k"),
                    attrs_.get_int("largest", 1) != 0, values.data(), indices.data());
          upload(be, t.out[0]->value, values);
          upload(be, t.out[1]->value, indices);
          break;
        }
        case OpType::ArgMax:
        case OpType::ArgMin: {
          const auto xv = host_copy(be, x.value, x.elements());
          Ints out(static_cast<std::size_t>(t.out[0]->elements()));
          ik::arg_extreme(xv.data(), x.shape, axis_, type_ == OpType::ArgMax,
                          attrs_.get_int("select_last_index", 0) != 0, out.data());
          upload(be, t.out[0]->value, out);
          break;
        }
        case OpType::OneHot: {
          // Floating-point indices truncate to integers (ONNX's cast to int64).
          Ints idx;
          if (x.elem_size == 8) {
            idx = host_ints(be, x);
          } else {
            for (float v : host_copy(be, x.value, x.elements()))
              idx.push_back(static_cast<std::int64_t>(v));
          }
          const double off = attrs_.get_double("off_value", 0.0);
          const double on = attrs_.get_double("on_value", 1.0);
          const std::int64_t depth = attrs_.get_int("depth");
          const auto n = static_cast<std::size_t>(t.out[0]->elements());
          if (t.out[0]->elem_size == 8) {  // dtype int64
            Ints out(n);
            ik::one_hot(idx.data(), x.shape, axis_, depth,
                        static_cast<std::int64_t>(std::llround(off)),
                        static_cast<std::int64_t>(std::llround(on)), out.data());
            upload(be, t.out[0]->value, out);
          } else {
            std::vector<float> out(n);
            ik::one_hot(idx.data(), x.shape, axis_, depth, static_cast<float>(off),
                        static_cast<float>(on), out.data());
            upload(be, t.out[0]->value, out);
          }
          break;
        }
        case OpType::GatherElements: {
          const auto data = host_copy(be, x.value, x.elements());
          const Ints idx = host_ints(be, *t.in[1]);
          std::vector<float> out(idx.size());
          if (!ik::gather_elements(data.data(), x.shape, idx.data(), t.in[1]->shape, axis_,
                                   out.data()))
            index_out_of_range(ctx, x.shape[static_cast<std::size_t>(axis_)]);
          upload(be, t.out[0]->value, out);
          break;
        }
        default: {  // ScatterElements
          const auto data = host_copy(be, x.value, x.elements());
          const Ints idx = host_ints(be, *t.in[1]);
          const auto upd = host_copy(be, t.in[2]->value, t.in[2]->elements());
          std::vector<float> out(data.size());
          if (!ik::scatter_elements(data.data(), x.shape, idx.data(), upd.data(), t.in[1]->shape,
                                    axis_, add(), out.data()))
            index_out_of_range(ctx, x.shape[static_cast<std::size_t>(axis_)]);
          upload(be, t.out[0]->value, out);
        }
      }
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    DeviceBackend& be = ctx.backend;
    for (auto& t : tasks) {
      if (!t.out[0]->grad) continue;
      const Slot& x = *t.in[0];
      switch (type_) {
        case OpType::TopK: {
          if (!x.grad) break;
          const auto dy = host_copy(be, t.out[0]->grad, t.out[0]->elements());
          const Ints idx = host_ints(be, *t.out[1]);
          auto dx = host_copy(be, x.grad, x.elements());
          ik::gather_elements_backward(dy.data(), idx.data(), t.out[0]->shape, x.shape, axis_,
                                       dx.data());
          upload(be, x.grad, dx);
          break;
        }
        case OpType::GatherElements: {
          if (!x.grad) break;
          const auto dy = host_copy(be, t.out[0]->grad, t.out[0]->elements());
          const Ints idx = host_ints(be, *t.in[1]);
          auto dx = host_copy(be, x.grad, x.elements());
          ik::gather_elements_backward(dy.data(), idx.data(), t.in[1]->shape, x.shape, axis_,
                                       dx.data());
          upload(be, x.grad, dx);
          break;
        }
        case OpType::ScatterElements: {
          Slot& u = *t.in[2];
          if (!x.grad && !u.grad) break;
          const auto dy = host_copy(be, t.out[0]->grad, t.out[0]->elements());
          const Ints idx = host_ints(be, *t.in[1]);
          std::vector<float> dx, du;
          if (x.grad) dx = host_copy(be, x.grad, x.elements());
          if (u.grad) du = host_copy(be, u.grad, u.elements());
          ik::scatter_elements_backward(dy.data(), x.shape, idx.data(), t.in[1]->shape, axis_,
                                        add(), x.grad ? dx.data() : nullptr,
                                        u.grad ? du.data() : nullptr);
          if (x.grad) upload(be, x.grad, dx);
          if (u.grad) upload(be, u.grad, du);
          break;
        }
        default:  // OneHot, ArgMax, ArgMin: integer inputs or outputs, no gradient
          break;
      }
    }
  }

 private:
  bool add() const { return attrs_.get_string("reduction", "none") == "add"; }

  OpType type_;
  Attributes attrs_;
  int axis_ = 0;
};

}  // namespace

static std::unique_ptr<OpRunner> make_index_runner(const Graph& g, const Node& n) {
  return std::make_unique<IndexRunner>(g, n);
}

UNITY_REGISTER_KERNEL_FAMILY(make_index_runner, is_index_operator)

}  // namespace unity::executor::detail
