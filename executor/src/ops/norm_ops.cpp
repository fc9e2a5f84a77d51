// BatchNorm and LayerNorm (and RMSNorm: a LayerNorm with "rms" = 1, without mean or beta).
// BatchNorm normalises with the statistics of the whole batch: tasks that hold other samples of
// the same channels sum their moments with an all-reduce (synchronised batch normalisation), so a
// data-parallel run computes exactly what one device computes.
#include <set>

#include "kernel_registry.h"
#include "op_helpers.h"

namespace unity::executor::detail {
namespace {

class BatchNormRunner final : public OpRunner {
 public:
  explicit BatchNormRunner(const Node& n)
      : act_(n.op), epsilon_(static_cast<float>(n.op.attrs.get_double("epsilon", 1e-5))) {}

  void prepare(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    // scratch: moments [2C], backward moments [2C], mean [C], invstd [C], dz, z
    for (auto& t : tasks) {
      const i64 c = t.out[0]->shape[1];
      const i64 n = t.out[0]->elements();
      t.scratch = {ctx.memory.allocate_floats(2 * c),
                   ctx.memory.allocate_floats(2 * c),
                   ctx.memory.allocate_floats(c),
                   ctx.memory.allocate_floats(c),
                   act_.none() ? nullptr : ctx.memory.allocate_floats(n),
                   act_.needs_input() ? ctx.memory.allocate_floats(n) : nullptr};
    }
    // Local tasks by statistics group, with the group's ranks.
    std::map<int, TaskBuffers*> local;
    for (auto& t : tasks) local[t.task->index] = &t;
    for (const auto& g : ctx.step.statistics_groups) {
      Group group;
      std::set<int> ranks;
      for (int i : g) {
        ranks.insert(ctx.step.tasks[i].rank);
        if (local.count(i)) group.tasks.push_back(local[i]);
      }
      group.ranks.assign(ranks.begin(), ranks.end());
      if (!group.tasks.empty()) groups_.push_back(std::move(group));
      for (int i : g) local.erase(i);
    }
    for (auto& [i, t] : local) groups_.push_back({{t}, {}});  // statistics of its own
  }

  void forward(StepContext& ctx, std::vector<TaskBuffers>&) override {
    auto& be = ctx.backend;
    const double count = elements_per_channel(ctx);
    for (auto& g : groups_) {
      // Two passes: the mean of the whole batch first, then the deviations from it.
      for (auto* t : g.tasks) {
        const auto [outer, c, inner] = dims(*t);
        be.channel_sums(t->in[0]->f(), f(t, 0), outer, c, inner);
      }
      share(ctx, g, 0, 0);
      for (auto* t : g.tasks) {
        const auto [outer, c, inner] = dims(*t);
        be.copy(f(t, 2), f(t, 0), static_cast<std::size_t>(c) * 4);
        be.scale(static_cast<float>(1.0 / count), f(t, 2), c);
        be.channel_squared_deviations(t->in[0]->f(), f(t, 2), f(t, 0) + c, outer, c, inner);
      }
      share(ctx, g, 0, 1);
      for (auto* t : g.tasks) {
        const auto [outer, c, inner] = dims(*t);
        be.inverse_std(f(t, 0) + c, count, epsilon_, f(t, 3), c);
        Slot& y = *t->out[0];
        be.channel_normalize(t->in[0]->f(), f(t, 2), f(t, 3), t->in[1]->f(), t->in[2]->f(), y.f(),
                             outer, c, inner);
        act_.forward(be, y.f(), f(t, 5), y.elements());
      }
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>&) override {
    auto& be = ctx.backend;
    const double count = elements_per_channel(ctx);
    for (auto& g : groups_) {
      for (auto* t : g.tasks) {
        const auto [outer, c, inner] = dims(*t);
        Slot& y = *t->out[0];
        float* b = f(t, 1);
        if (!y.grad) {
          be.fill_zero(b, static_cast<std::size_t>(2 * c) * 4);
          continue;
        }
        const float* dz = act_.backward(be, y.f(), f(t, 5), y.grad, f(t, 4), y.elements());
        be.channel_backward_moments(t->in[0]->f(), dz, f(t, 2), f(t, 3), b, b + c, outer, c, inner);
        // This task's share of the scale and shift gradients; copies of them sum across tasks.
        if (t->in[1]->grad) be.axpy(1.0f, b + c, t->in[1]->grad, c);
        if (t->in[2]->grad) be.axpy(1.0f, b, t->in[2]->grad, c);
      }
      share(ctx, g, 1, -1);
      for (auto* t : g.tasks) {
        Slot& y = *t->out[0];
        if (!y.grad || !t->in[0]->grad) continue;
        const auto [outer, c, inner] = dims(*t);
        const float* dz = act_.none() ? y.grad : f(t, 4);
        float* b = f(t, 1);
        be.channel_normalize_backward(t->in[0]->f(), dz, f(t, 2), f(t, 3), t->in[1]->f(), b, b + c,
                                      count, t->in[0]->grad, outer, c, inner);
      }
    }
  }

 private:
  struct Group {
    std::vector<TaskBuffers*> tasks;
    std::vector<int> ranks;  // empty: no other rank takes part
  };

  static float* f(TaskBuffers* t, int i) { return static_cast<float*>(t->scratch[i]); }

  static std::tuple<i64, i64, i64> dims(const TaskBuffers& t) {
    const auto& s = t.in[0]->shape;
    return {s[0], s[1], product(s, 2)};
  }

  // Elements each channel's statistics cover: the whole batch times the spatial size.
  static double elements_per_channel(const StepContext& ctx) {
    const auto sizes = ctx.node.outputs[0].sizes();
    double n = static_cast<double>(sizes[0]);
    for (std::size_t d = 2; d < sizes.size(); ++d) n *= static_cast<double>(sizes[d]);
    return n;
  }

  // Sums scratch buffer `which` over the group's tasks, here and on the other ranks: its first C
  // floats (half 0), its second C floats (half 1), or all 2C (half -1).
  static void share(StepContext& ctx, Group& g, int which, int half) {
    const i64 c = g.tasks[0]->out[0]->shape[1];
    const i64 offset = half == 1 ? c : 0;
    const i64 n = half < 0 ? 2 * c : c;
    float* first = f(g.tasks[0], which) + offset;
    for (std::size_t i = 1; i < g.tasks.size(); ++i)
      ctx.backend.axpy(1.0f, f(g.tasks[i], which) + offset, first, n);
    if (g.ranks.size() > 1) {
      ctx.backend.synchronize();
      ctx.comm.all_reduce(g.ranks, first, n);
    }
    for (std::size_t i = 1; i < g.tasks.size(); ++i)
      ctx.backend.copy(f(g.tasks[i], which) + offset, first, static_cast<std::size_t>(n) * 4);
  }

  FusedActivation act_;
  float epsilon_;
  std::vector<Group> groups_;
};

class LayerNormRunner final : public OpRunner {
 public:
  explicit LayerNormRunner(const Node& n)
      : k_(static_cast<int>(n.op.attrs.get_int("normalized_dims", 1))),
        epsilon_(static_cast<float>(n.op.attrs.get_double("epsilon", 1e-5))),
        rms_(n.op.attrs.get_int("rms", 0) != 0) {}

  void prepare(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const auto [rows, cols] = dims(t);
      (void)cols;
      t.scratch = {ctx.memory.allocate_floats(rows), ctx.memory.allocate_floats(rows)};
    }
  }

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const auto [rows, cols] = dims(t);
      const float* gamma = t.in.size() > 1 ? t.in[1]->f() : nullptr;
      const float* beta = t.in.size() > 2 ? t.in[2]->f() : nullptr;
      ctx.backend.layer_norm(t.in[0]->f(), gamma, beta, t.out[0]->f(),
                             static_cast<float*>(t.scratch[0]), static_cast<float*>(t.scratch[1]),
                             rows, cols, epsilon_, rms_);
    }
  }

  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      if (!t.out[0]->grad) continue;
      const auto [rows, cols] = dims(t);
      const float* gamma = t.in.size() > 1 ? t.in[1]->f() : nullptr;
      float* dgamma = t.in.size() > 1 ? t.in[1]->grad : nullptr;
      float* dbeta = t.in.size() > 2 ? t.in[2]->grad : nullptr;
      ctx.backend.layer_norm_backward(t.in[0]->f(), gamma, static_cast<float*>(t.scratch[0]),
                                      static_cast<float*>(t.scratch[1]), t.out[0]->grad,
                                      t.in[0]->grad, dgamma, dbeta, rows, cols, rms_);
    }
  }

 private:
  std::pair<i64, i64> dims(const TaskBuffers& t) const {
    const auto& s = t.in[0]->shape;
    const std::size_t first = s.size() - static_cast<std::size_t>(k_);
    return {product(s, 0, first), product(s, first)};
  }
  int k_;
  float epsilon_;
  bool rms_;
};

}  // namespace

static std::unique_ptr<OpRunner> make_norm_runner(const Graph&, const Node& n) {
  if (n.op.type == OpType::BatchNorm) return std::make_unique<BatchNormRunner>(n);
  return std::make_unique<LayerNormRunner>(n);
}

UNITY_REGISTER_KERNEL(make_norm_runner, OpType::BatchNorm, OpType::LayerNorm)

}  // namespace unity::executor::detail
