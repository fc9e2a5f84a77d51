#pragma once
// Valid PCGs chosen by the fuzz input (tests/core/random_graphs.h's generator, driven by
// FuzzedDataProvider instead of a seed, and with more operator kinds): series-parallel graphs of
// element-wise ops, linear layers with (replicated) weights, parallel-operator pairs that change
// the degree in between, forks joined by Add, Mul or a Concat, Split/Concat pairs, Softmax,
// LayerNorm, operators along an axis, TopK + ScatterElements, a masked Where or a Reduction of
// each row scaling it, Arithmetic (max, min, sum, mean, prelu, mod, pow), Resize or Pad of the
// features, optionally ending in a loss. Each choice is made only where its shapes are valid, so
// libFuzzer's mutations explore graph structure rather than shape errors.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>
#include <vector>

#include "unity/core/ops/operator_definition.h"
#include "unity/core/pcg/graph_builder.h"

namespace unity::fuzz {

class FuzzedSpGraph {
 public:
  FuzzedSpGraph(FuzzedDataProvider& in, int max_ops) : in_(in), b_(g_), budget_(max_ops) {}

  Graph build() {
    const std::int64_t batch = std::int64_t{2} << in_.ConsumeIntegralInRange(0, 3);
    features_ = std::int64_t{4} << in_.ConsumeIntegralInRange(0, 3);
    g_.batch_size = batch;
    auto x = b_.input("x", {batch, features_});
    TensorRef y = b_.relu(x, "first");
    --budget_;
    while (budget_ > 0 && in_.remaining_bytes() > 0) y = gen(y, 0);
    if (in_.ConsumeBool() && g_.shape(y).num_pieces() == 1) {
      auto labels = b_.input("labels", {batch}, DataType::Int64);
      b_.softmax_cross_entropy(y, labels, "loss");
    }
    return g_;
  }

 private:
  // A tensor every op below may read as a plain one: no partition, replica or partial sum.
  bool plain(TensorRef x) const { return g_.shape(x).num_pieces() == 1; }

  // Ops inside a fork or a parallel pair keep their input's shape, so that the branches join.
  TensorRef gen(TensorRef x, int depth) {
    if (budget_ <= 0) return x;
    const ParallelTensorShape s = g_.shape(x);  // a copy: adding nodes may move the graph's
    const int choice = depth > 2 ? 0 : in_.ConsumeIntegralInRange(0, 9);
    switch (choice) {
      case 1:
        if (s.replica == 1 && s.dims[1].degree == 1) {
          --budget_;
          const std::int64_t width = s.dims[1].size;
          TensorRef w = b_.weight(name("w"), {width, width});
          const int d = s.dims[0].degree;
          if (d > 1) w = b_.replicate(w, d);
          return b_.op(OpType::Linear, {{"out_features", width}}, {x, w}, name("fc"));
        }
        break;
      case 2:
      case 3:
        if (budget_ >= 3 && s.num_pieces() * 2 <= 4) {
          const int dim = choice - 2;
          if (s.dims[dim].size % (s.dims[dim].degree * 2) != 0) break;
          budget_ -= 2;
          auto p = b_.partition(x, dim, 2, name("part"));
          p = gen(p, depth + 1);
          return b_.combine(p, dim, 2, name("combine"));
        }
        break;
      case 4:
        if (budget_ >= 3 && s.num_pieces() * 2 <= 4) {
          budget_ -= 2;
          auto r = b_.replicate(x, 2, name("rep"));
          r = gen(r, depth + 1);
          return b_.reduce(r, 2, name("reduce"));
        }
        break;
      case 5:
        if (budget_ >= 3) {
          --budget_;
          auto a = gen(x, depth + 1);
          auto c = gen(x, depth + 1);
          return in_.ConsumeBool() ? b_.add(a, c, name("add")) : b_.mul(a, c, name("mul"));
        }
        break;
      case 6:
        // Concat of two branches, then a linear layer back to the width the rest expects.
        if (budget_ >= 4 && plain(x)) {
          budget_ -= 2;
          auto a = gen(x, depth + 1);
          auto c = gen(x, depth + 1);
          const std::int64_t width = g_.shape(x).dims[1].size;
          auto cat = b_.concat({a, c}, 1, name("cat"));
          return b_.linear(cat, width, name("proj"), in_.ConsumeBool());
        }
        break;
      case 7:
        if (budget_ >= 4 && plain(x) && s.dims[1].size >= 2) {
          budget_ -= 2;
          const std::int64_t width = s.dims[1].size, half = width / 2;
          auto parts = b_.split(x, 1, {half, width - half}, name("split"));
          auto a = gen(parts[0], depth + 1);
          auto c = gen(parts[1], depth + 1);
          return b_.concat({a, c}, 1, name("cat"));
        }
        break;
      case 8:
        if (plain(x)) {
          --budget_;
          switch (in_.ConsumeIntegralInRange(0, 5)) {
            case 5:
              return arithmetic(x);
            case 0:
              return b_.softmax(x, name("softmax"));
            case 3: {
              if (in_.ConsumeBool()) {
              // The mask operators: x kept where it exceeds a threshold, else a fill (or another
              // function of x), as a padding mask selects attention scores.
              const TensorRef mask =
                  b_.op(OpType::Compare,
                        {{"comparison", std::string(in_.ConsumeBool() ? "greater" : "less")},
                         {"scalar", 0.0}},
                        {x}, name("mask"));
              if (in_.ConsumeBool())
                return b_.op(OpType::Where, {{"y", -1.0}}, {mask, x}, name("fill"));
              return b_.op(OpType::Where, {}, {mask, x, b_.relu(x, name("other"))}, name("where"));
              }
              // A Reduction of each row (any kind but log_sum, whose log of a negative sum is
              // NaN), kept as [N, 1] and broadcast back over it.
              static const char* const kKinds[] = {"max", "min",        "prod",       "l1",
                                                   "l2",  "sum_square", "log_sum_exp"};
              const TensorRef r =
                  b_.op(OpType::Reduction,
                        {{"reduction", std::string(kKinds[in_.ConsumeIntegralInRange(0, 6)])},
                         {"axes", std::vector<std::int64_t>{1}},
                         {"keepdims", std::int64_t{1}}},
                        {x}, name("reduce"));
              return b_.mul(x, r, name("scaled"));
            }
            case 1:
              return b_.layer_norm(x, name("ln"));
            case 2:
              if (s.dims[1].size >= 2) {
                // The index operators: the top half of each row written back where it was found.
                const std::int64_t k = s.dims[1].size / 2;
                const TensorRef top =
                    b_.op(OpType::TopK, {{"k", k}, {"axis", std::int64_t{1}}}, {x}, name("topk"));
                return b_.op(OpType::ScatterElements, {{"axis", std::int64_t{1}}},
                             {x, TensorRef{top.node, 1}, top}, name("scatter"));
              }
              return b_.softmax(x, name("softmax"));
            default:
              return along_last_axis(x);
          }
        }
        break;
      case 9:
        if (depth == 0 && plain(x)) {
          // The one place the width changes: between forks, never inside one.
          --budget_;
          features_ = std::int64_t{4} << in_.ConsumeIntegralInRange(0, 3);
          if (features_ > s.dims[1].size && in_.ConsumeBool()) {
            // Or the features padded to the new width (Pad, in any mode).
            const std::int64_t extra = features_ - s.dims[1].size, before = extra / 2;
            static const char* const kModes[] = {"constant", "reflect", "edge"};
            return b_.op(OpType::Pad,
                         {{"pads", std::vector<std::int64_t>{0, before, 0, extra - before}},
                          {"mode", std::string(kModes[in_.ConsumeIntegralInRange(0, 2)])}},
                         {x}, name("pad"));
          }
          if (features_ != s.dims[1].size && in_.ConsumeBool()) {
            // Or the features resampled to the new width (Resize, linear or nearest).
            return b_.op(OpType::Resize,
                         {{"axes", std::vector<std::int64_t>{1}},
                          {"sizes", std::vector<std::int64_t>{features_}},
                          {"mode", std::string(in_.ConsumeBool() ? "linear" : "nearest")}},
                         {x}, name("resize"));
          }
          return b_.linear(x, features_, name("fc"), in_.ConsumeBool());
        }
        break;
      default:
        break;
    }
    --budget_;
    // Any registered point-wise operator (those with required parameters get one).
    static const std::vector<const OperatorDefinition*> pointwise = [] {
      std::vector<const OperatorDefinition*> v;
      for (const OperatorDefinition* d : operator_definitions())
        if (d->pointwise) v.push_back(d);
      return v;
    }();
    const OperatorDefinition& d =
        *pointwise[in_.ConsumeIntegralInRange<std::size_t>(0, pointwise.size() - 1)];
    Attributes attrs;
    for (const auto& p : d.pointwise->parameters)
      if (!p.default_value) attrs.set(std::string(p.name), 0.5);
    return b_.op(d.info.type, attrs, {x}, name("act"));
  }

  // Any registered operator along an axis (LogSoftmax, CumSum, LRN, Trilu, ...), on the last one,
  // its parameters at their defaults or 1 (a required one always 1).
  TensorRef along_last_axis(TensorRef x) {
    static const std::vector<const OperatorDefinition*> along = [] {
      std::vector<const OperatorDefinition*> v;
      for (const OperatorDefinition* d : operator_definitions())
        if (d->along_axis) v.push_back(d);
      return v;
    }();
    const OperatorDefinition& d =
        *along[in_.ConsumeIntegralInRange<std::size_t>(0, along.size() - 1)];
    Attributes attrs{{"axis", std::int64_t{-1}}};
    for (const auto& p : d.along_axis->parameters)
      if (in_.ConsumeBool() || !p.default_value) attrs.set(std::string(p.name), 1.0);
    return b_.op(d.info.type, attrs, {x}, name("axis"));
  }

  // Arithmetic, any function: max, min, sum, mean of x, its Relu and a row of weights; prelu with
  // a slope per feature; mod or fmod by a scalar; pow of a positive base by x.
  TensorRef arithmetic(TensorRef x) {
    static const char* const kFunctions[] = {"max",   "min", "sum",  "mean",
                                             "prelu", "mod", "fmod", "pow"};
    const std::string f = kFunctions[in_.ConsumeIntegralInRange(0, 7)];
    const std::int64_t width = g_.shape(x).dims[1].size;
    Attributes attrs{{"function", f}};
    std::vector<TensorRef> in{x};
    if (f == "prelu") {
      in.push_back(b_.weight(name("slope"), {width}));
    } else if (f == "mod" || f == "fmod") {
      attrs.set("scalar", 1.5);
    } else if (f == "pow") {
      in = {b_.op(OpType::ScalarAdd, {{"scalar", 1.0}},
                  {b_.op(OpType::Sigmoid, {}, {x}, name("s"))}, name("base")),
            x};
    } else {
      in.push_back(b_.relu(x, name("relu")));
      in.push_back(b_.weight(name("row"), {width}));
    }
    return b_.op(OpType::Arithmetic, attrs, in, name("arith"));
  }

  std::string name(const char* base) { return std::string(base) + std::to_string(counter_++); }

  FuzzedDataProvider& in_;
  Graph g_;
  GraphBuilder b_;
  int budget_;
  std::int64_t features_ = 16;
  int counter_ = 0;
};

}  // namespace unity::fuzz
