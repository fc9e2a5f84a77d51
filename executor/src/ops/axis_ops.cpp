// Operators along one axis that have no kernel of their own in the backends (AxisFunction, in
// their core definition): each slice [outer, :, inner] is gathered, evaluated in double on the
// host, and scattered back. Staged through host memory as the point-wise ones are
// (pointwise_ops.cpp): correct on a GPU, and slow there.
#include <fmt/format.h>

#include <utility>
#include <vector>

#include "kernel_registry.h"
#include "op_helpers.h"
#include "unity/core/ops/operator_definition.h"

namespace unity::executor::detail {
namespace {

class AxisRunner final : public OpRunner {
 public:
  AxisRunner(const AxisFunction& f, int axis, std::vector<double> params)
      : f_(f), axis_(axis), params_(std::move(params)) {}

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const Layout l = layout(*t.in[0]);
      std::vector<float> x = host_copy(ctx.backend, t.in[0]->value, l.total()), y(x.size());
      std::vector<double> xs(l.axis), ys(l.axis);
      for_each_slice(l, [&](i64 base) {
        gather(x, base, l, xs);
        f_.forward(xs.data(), ys.data(), l.axis, params_.data());
        scatter(ys, base, l, y);
      });
      ctx.backend.to_device(t.out[0]->value, y.data(), y.size() * sizeof(float));
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      if (!t.in[0]->grad || !t.out[0]->grad) continue;
      const Layout l = layout(*t.in[0]);
      const std::vector<float> x = host_copy(ctx.backend, t.in[0]->value, l.total());
      const std::vector<float> y = host_copy(ctx.backend, t.out[0]->value, l.total());
      const std::vector<float> dy = host_copy(ctx.backend, t.out[0]->grad, l.total());
      std::vector<float> dx = host_copy(ctx.backend, t.in[0]->grad, l.total());
      std::vector<double> xs(l.axis), ys(l.axis), dys(l.axis), dxs(l.axis);
      for_each_slice(l, [&](i64 base) {
        gather(x, base, l, xs);
        gather(y, base, l, ys);
        gather(dy, base, l, dys);
        f_.backward(xs.data(), ys.data(), dys.data(), dxs.data(), l.axis, params_.data());
        // Gradients accumulate: dx += J^T dy.
        for (i64 i = 0; i < l.axis; ++i)
          dx[static_cast<std::size_t>(base + i * l.inner)] +=
              static_cast<float>(dxs[static_cast<std::size_t>(i)]);
      });
      ctx.backend.to_device(t.in[0]->grad, dx.data(), dx.size() * sizeof(float));
    }
  }

 private:
  struct Layout {
    i64 outer, axis, inner;
    i64 total() const { return outer * axis * inner; }
  };

  Layout layout(const Slot& s) const {
    const int rank = static_cast<int>(s.shape.size());
    const int a = axis_ < 0 ? axis_ + rank : axis_;
    return {product(s.shape, 0, static_cast<std::size_t>(a)), s.shape[static_cast<std::size_t>(a)],
            product(s.shape, static_cast<std::size_t>(a) + 1)};
  }

  // Calls visit(base) with the offset of each slice's first element (its stride is `inner`).
  template <typename Visit>
  static void for_each_slice(const Layout& l, Visit visit) {
    for (i64 o = 0; o < l.outer; ++o)
      for (i64 in = 0; in < l.inner; ++in) visit(o * l.axis * l.inner + in);
  }

  static void gather(const std::vector<float>& v, i64 base, const Layout& l,
                     std::vector<double>& slice) {
    for (i64 i = 0; i < l.axis; ++i)
      slice[static_cast<std::size_t>(i)] = v[static_cast<std::size_t>(base + i * l.inner)];
  }

  static void scatter(const std::vector<double>& slice, i64 base, const Layout& l,
                      std::vector<float>& v) {
    for (i64 i = 0; i < l.axis; ++i)
      v[static_cast<std::size_t>(base + i * l.inner)] =
          static_cast<float>(slice[static_cast<std::size_t>(i)]);
  }

  const AxisFunction& f_;
  int axis_;
  std::vector<double> params_;
};

}  // namespace

static std::unique_ptr<OpRunner> make_axis_runner(const Graph& g, const Node& n) {
  const AxisFunction* f = axis_function(n.op.type);
  if (!f)
    throw LoweringError(
        fmt::format("{}: no kernel for {}", g.describe(n.id), to_string(n.op.type)));
  return std::make_unique<AxisRunner>(*f, static_cast<int>(n.op.attrs.get_int("axis", -1)),
                                      operator_parameters(n.op));
}

static bool has_axis_function(OpType t) { return axis_function(t) != nullptr; }
UNITY_REGISTER_KERNEL_FAMILY(make_axis_runner, has_axis_function)

}  // namespace unity::executor::detail
