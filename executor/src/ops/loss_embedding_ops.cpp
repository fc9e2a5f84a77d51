// Losses (per-sample values; the training objective is their mean) and embedding lookups. A task
// holding some rows of a table looks up only those rows and leaves zeros elsewhere: its result is a
// partial sum that a Reduce completes.
#include <fmt/format.h>

#include "kernel_registry.h"
#include "op_helpers.h"

namespace unity::executor::detail {
namespace {

// With the classes split over `blocks` tasks (vocab_parallel), each task gathers its rows' logits
// and keeps an equal share of the loss, 1 / blocks of it: the Reduce after it sums the shares,
// and each task's gradient is its share's.
class CrossEntropyRunner final : public OpRunner {
 public:
  explicit CrossEntropyRunner(const Graph& g, const Node& n)
      : blocks_(g.shape(n.inputs.at(0)).dims.back().degree) {}
  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const i64 classes = t.in[0]->shape.back();
      const i64 rows = t.in[0]->elements() / classes;
      if (!ctx.backend.softmax_cross_entropy(t.in[0]->f(), t.in[1]->ints(), t.out[0]->f(), rows,
                                             classes))
        throw InputError(fmt::format("{}: a label lies outside [0, {})",
                                     ctx.program.graph.describe(ctx.node.id), classes));
      if (blocks_ > 1) ctx.backend.scale(1.0f / static_cast<float>(blocks_), t.out[0]->f(), rows);
    }
  }
  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      if (!t.in[0]->grad || !t.out[0]->grad) continue;
      const i64 classes = t.in[0]->shape.back();
      const i64 rows = t.in[0]->elements() / classes;
      // The share's gradient: the loss gradient scaled for the call, then restored.
      const float share = 1.0f / static_cast<float>(blocks_);
      if (blocks_ > 1) ctx.backend.scale(share, t.out[0]->grad, rows);
      ctx.backend.softmax_cross_entropy_backward(t.in[0]->f(), t.in[1]->ints(), t.out[0]->grad,
                                                 t.in[0]->grad, rows, classes);
      if (blocks_ > 1) ctx.backend.scale(static_cast<float>(blocks_), t.out[0]->grad, rows);
    }
  }

 private:
  int blocks_ = 1;
};

class MseRunner final : public OpRunner {
 public:
  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const i64 rows = t.in[0]->shape[0];
      ctx.backend.mse(t.in[0]->f(), t.in[1]->f(), t.out[0]->f(), rows, t.in[0]->elements() / rows);
    }
  }
  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      if (!t.out[0]->grad || (!t.in[0]->grad && !t.in[1]->grad)) continue;
      const i64 rows = t.in[0]->shape[0];
      ctx.backend.mse_backward(t.in[0]->f(), t.in[1]->f(), t.out[0]->grad, t.in[0]->grad,
                               t.in[1]->grad, rows, t.in[0]->elements() / rows);
    }
  }
};

class EmbeddingRunner final : public OpRunner {
 public:
  explicit EmbeddingRunner(const Node& n)
      : bag_(n.op.type == OpType::EmbeddingBag),
        mean_(n.op.attrs.get_string("aggregate", "sum") == "mean"),
        entries_(n.op.attrs.get_int("num_entries")) {}

  void forward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      const Layout l = layout(t);
      if (!ctx.backend.embedding(t.in[0]->ints(), l.count, l.bag, mean_, t.in[1]->f(),
                                 t.in[1]->region.begin[0], t.in[1]->shape[0], t.in[1]->shape[1],
                                 entries_, t.out[0]->f()))
        throw InputError(fmt::format("{}: an index lies outside [0, {})",
                                     ctx.program.graph.describe(ctx.node.id), entries_));
    }
  }
  void backward(StepContext& ctx, std::vector<TaskBuffers>& tasks) override {
    for (auto& t : tasks) {
      if (!t.in[1]->grad || !t.out[0]->grad) continue;
      const Layout l = layout(t);
      ctx.backend.embedding_backward(t.in[0]->ints(), l.count, l.bag, mean_, t.out[0]->grad,
                                     t.in[1]->region.begin[0], t.in[1]->shape[0], t.in[1]->shape[1],
                                     t.in[1]->grad);
    }
  }

 private:
  struct Layout {
    i64 count, bag;
  };
  Layout layout(const TaskBuffers& t) const {
    if (bag_) return {t.in[0]->shape[0], t.in[0]->shape[1]};
    return {t.in[0]->elements(), 1};
  }
  bool bag_, mean_;
  i64 entries_;
};

}  // namespace

static std::unique_ptr<OpRunner> make_loss_runner(const Graph& g, const Node& n) {
  if (n.op.type == OpType::SoftmaxCrossEntropy) return std::make_unique<CrossEntropyRunner>(g, n);
  return std::make_unique<MseRunner>();
}

static std::unique_ptr<OpRunner> make_embedding_runner(const Graph&, const Node& n) {
  return std::make_unique<EmbeddingRunner>(n);
}

UNITY_REGISTER_KERNEL(make_loss_runner, OpType::SoftmaxCrossEntropy, OpType::MSELoss)
UNITY_REGISTER_KERNEL(make_embedding_runner, OpType::Embedding, OpType::EmbeddingBag)

}  // namespace unity::executor::detail
