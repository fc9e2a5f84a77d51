#pragma once
// Random valid PCGs for property and fuzz tests.
#include <random>
#include <string>

#include "unity/core/pcg/graph_builder.h"

namespace unity::testing {

// Random series-parallel graphs whose branches keep their input's parallel shape, built from
// element-wise ops, linear layers with (replicated) weights, parallel-operator pairs that change
// the degree in between, and forks joined by Add.
class RandomSpGraph {
 public:
  RandomSpGraph(unsigned seed, int max_ops) : rng_(seed), b_(g_), budget_(max_ops) {}

  Graph build() {
    auto x = b_.input("x", {16, 16});
    TensorRef y = b_.relu(x, "first");
    --budget_;
    while (budget_ > 0) y = gen(y, 0);
    return g_;
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  TensorRef gen(TensorRef x, int depth) {
    const auto& s = g_.shape(x);
    const int choice = depth > 2 ? 0 : pick(5);
    if (budget_ <= 0) return x;
    switch (choice) {
      case 1:
        if (s.replica == 1 && s.dims[1].degree == 1) {
          --budget_;
          TensorRef w = b_.weight(name("w"), {16, 16});
          const int d = s.dims[0].degree;
          if (d > 1) w = b_.replicate(w, d);
          return b_.op(OpType::Linear, {{"out_features", std::int64_t{16}}}, {x, w}, name("fc"));
        }
        break;
      case 2:
        if (budget_ >= 3 && s.num_pieces() * 2 <= 4) {
          budget_ -= 2;
          auto p = b_.partition(x, 0, 2, name("part"));
          p = gen(p, depth + 1);
          return b_.combine(p, 0, 2, name("combine"));
        }
        break;
      case 3:
        if (budget_ >= 3 && s.num_pieces() * 2 <= 4) {
          budget_ -= 2;
          auto r = b_.replicate(x, 2, name("rep"));
          r = gen(r, depth + 1);
          return b_.reduce(r, 2, name("reduce"));
        }
        break;
      case 4:
        if (budget_ >= 3) {
          --budget_;
          auto a = gen(x, depth + 1);
          auto c = gen(x, depth + 1);
          return b_.add(a, c, name("add"));
        }
        break;
      default:
        break;
    }
    --budget_;
    return b_.unary(pick(2) ? OpType::Relu : OpType::Tanh, x, name("act"));
  }

  std::string name(const char* base) { return std::string(base) + std::to_string(counter_++); }

  std::mt19937 rng_;
  Graph g_;
  GraphBuilder b_;
  int budget_;
  int counter_ = 0;
};

}  // namespace unity::testing
