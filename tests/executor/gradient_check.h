#pragma once
// An operator's backward pass against central differences of its forward pass: every operand is a
// Weight, so the gradient of every input is checked, and the loss is an MSE against a random
// target (test_gradient_checks.cpp, and each operator's own test).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "unity/core/pcg/graph_builder.h"
#include "unity/executor/communicator.h"
#include "unity/executor/device_backend.h"
#include "unity/executor/program.h"
#include "unity/executor/training.h"

namespace unity::testing {

using executor::HostTensor;
using executor::Program;

struct Check {
  bool positive = false;  // operands drawn from [0.5, 1.5] (Sqrt, Pow, Div)
  // Otherwise from [low, high].
  float low = -1.0f, high = 1.0f;
  double tolerance = 2e-2;
};

inline std::map<NodeId, HostTensor> random_sources(const Graph& g, unsigned seed, const Check& c) {
  std::mt19937 rng(seed);
  std::map<NodeId, HostTensor> out;
  for (const auto& [id, n] : g.nodes()) {
    if (!is_source_op(n.op.type)) continue;
    const auto& s = n.outputs[0];
    HostTensor h;
    h.shape = s.sizes();
    const auto count = static_cast<std::size_t>(s.num_elements());
    if (!is_floating(s.dtype)) {
      h.integer = true;
      // Labels and indices: below the smallest class or table size any test uses.
      std::uniform_int_distribution<std::int64_t> pick(0, n.op.attrs.get_int("range", 3) - 1);
      for (std::size_t i = 0; i < count; ++i) h.integers.push_back(pick(rng));
    } else {
      std::uniform_real_distribution<float> u(c.positive ? 0.5f : c.low,
                                              c.positive ? 1.5f : c.high);
      for (std::size_t i = 0; i < count; ++i) h.values.push_back(u(rng));
    }
    out[id] = std::move(h);
  }
  return out;
}

inline double loss_of(const Program& p, const std::map<NodeId, HostTensor>& sources) {
  auto backend = executor::make_cpu_backend(1);
  auto comm = executor::make_local_communicator();
  return executor::compute_gradients(p, sources, *backend, *comm).loss;
}

// Builds the graph with `body` (which returns the tensor to fit), adds an MSE loss, and compares
// analytic and numeric gradients of a sample of every weight's elements.
inline void check_gradients(const std::function<TensorRef(GraphBuilder&)>& body, Check c = {}) {
  Graph g;
  GraphBuilder b(g);
  TensorRef y = body(b);
  if (g.node(y.node).op.type != OpType::SoftmaxCrossEntropy &&
      g.node(y.node).op.type != OpType::MSELoss)
    b.mse_loss(y, b.input("target", g.shape(y).sizes()), "loss");
  const Program p = executor::lower_plan(g, executor::single_device_views(g), 1);
  auto sources = random_sources(g, 7, c);
  auto backend = executor::make_cpu_backend(1);
  auto comm = executor::make_local_communicator();
  const executor::Gradients analytic = executor::compute_gradients(p, sources, *backend, *comm);
  std::mt19937 rng(11);
  int checked = 0;
  for (const auto& [id, n] : g.nodes()) {
    if (n.op.type != OpType::Weight) continue;
    const auto& grad = analytic.weights.at(n.op.name).values;
    auto& value = sources[id].values;
    std::uniform_int_distribution<std::size_t> pick(0, value.size() - 1);
    for (int k = 0; k < 6; ++k) {
      const std::size_t i = pick(rng);
      const float saved = value[i];
      const float eps = 1e-2f * std::max(1.0f, std::abs(saved));
      value[i] = saved + eps;
      const double up = loss_of(p, sources);
      value[i] = saved - eps;
      const double down = loss_of(p, sources);
      value[i] = saved;
      const double numeric = (up - down) / (2.0 * eps);
      EXPECT_NEAR(grad[i], numeric, 1e-4 + c.tolerance * std::abs(numeric))
          << n.op.name << "[" << i << "] of " << g.node(y.node).op.name;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace unity::testing
