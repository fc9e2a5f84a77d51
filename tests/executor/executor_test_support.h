#pragma once
// Shared by the executor tests: plans built from PCGs with the machine-mapping search, runs on
// threads (one rank each) or through the real launcher, and comparisons with the one-rank
// reference.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <thread>

#include "unity/core/cost/cost_model.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/mapping/machine_mapping.h"
#include "unity/executor/communicator.h"
#include "unity/executor/device_backend.h"
#include "unity/executor/program.h"
#include "unity/executor/reference.h"
#include "unity/executor/training.h"

namespace unity::executor::testing {

// The forward values of `g`'s sinks on one CPU device, the inputs given by node: what ONNX's node
// tests and the import tests compare with their expected outputs (no loss needed).
inline std::map<TensorRef, HostTensor> evaluate_on_one_device(
    const Graph& g, const std::map<NodeId, HostTensor>& given) {
  LoweringOptions evaluation;
  evaluation.require_loss = false;
  const Program p = lower_plan(g, single_device_views(g), 1, evaluation);
  auto backend = make_cpu_backend(1);
  auto comm = make_local_communicator();
  return evaluate(p, given, *backend, *comm);
}

// The views the mapping search picks for `pcg` on `devices` cpu-local ranks.
inline std::map<NodeId, MachineView> mapped_views(const Graph& pcg, int devices) {
  const MachineSpec machine = load_machine("cpu-local", {0, devices});
  const CostModel model(machine);
  const MappingCost costs(pcg, model);
  const MachineMapping mapping = optimize_machine_mapping(costs);
  EXPECT_TRUE(mapping.feasible);
  return mapping.views;
}

// Runs `body` on `ranks` threads, one rank each with its own CPU backend; returns rank 0's result.
template <typename Body>
TrainingResult run_on_threads(int ranks, Body body) {
  auto comms = make_thread_communicators(ranks);
  std::vector<TrainingResult> results(ranks);
  std::vector<std::string> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        auto backend = make_cpu_backend(1);
        results[r] = body(*backend, *comms[r]);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  return results[0];
}

// Trains `program` with one thread per rank; returns rank 0's result.
inline TrainingResult train_on_threads(const Program& program, TrainingOptions options) {
  options.collect_weights = true;
  return run_on_threads(program.ranks, [&](DeviceBackend& backend, Communicator& comm) {
    return train(program, options, backend, comm);
  });
}

inline TrainingResult train_reference(const Graph& pcg, TrainingOptions options) {
  const Graph serial = serial_reference(pcg);
  const Program program = lower_plan(serial, single_device_views(serial), 1);
  return train_on_threads(program, options);
}

// max |a - b| / max |b| over one tensor (0 for equal tensors).
inline double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// Losses and every weight of a run within `tolerance` (relative) of the reference's.
inline void expect_matches(const TrainingResult& run, const TrainingResult& ref, double tolerance) {
  ASSERT_EQ(run.losses.size(), ref.losses.size());
  for (std::size_t i = 0; i < ref.losses.size(); ++i)
    EXPECT_LE(std::abs(run.losses[i] - ref.losses[i]), tolerance * std::abs(ref.losses[i]))
        << "iteration " << i << ": " << run.losses[i] << " vs " << ref.losses[i];
  ASSERT_EQ(run.weights.size(), ref.weights.size());
  for (const auto& [name, w] : ref.weights) {
    auto it = run.weights.find(name);
    ASSERT_NE(it, run.weights.end()) << name;
    ASSERT_EQ(it->second.values.size(), w.values.size()) << name;
    EXPECT_LE(relative_difference(it->second.values, w.values), tolerance) << name;
  }
}

}  // namespace unity::executor::testing

#include "unity/core/pcg/graph_builder.h"
#include "unity/core/strategies/data_parallel.h"

namespace unity::executor::testing {

// DLRM with model-parallel embeddings (the Neo/DLRM layout): MLPs data-parallel over `d` ranks,
// each embedding table whole on one rank (table-wise) or split by rows over all ranks (row-wise:
// partial lookups summed by a Reduce, then split by samples: a reduce-scatter).
inline Graph dlrm_model_parallel(const Graph& serial, int d, bool row_wise) {
  Graph g = make_data_parallel(serial, d);
  GraphBuilder b(g);
  for (NodeId id : g.topological_order()) {
    if (!g.contains(id)) continue;
    const Node n = g.node(id);
    if (n.op.type != OpType::EmbeddingBag) continue;
    const TensorRef indices =
        g.node(n.inputs[0].node).inputs[0];  // under the data-parallel Partition
    const TensorRef table = g.node(n.inputs[1].node).inputs[0];  // under the Replicate
    TensorRef out;
    if (row_wise && n.op.attrs.get_int("num_entries") % d == 0) {
      const NodeId e = g.add(n.op, {b.replicate(indices, d), b.partition(table, 0, d)});
      out = b.partition(b.reduce({e, 0}, d), 0, d);
    } else {
      out = b.partition({g.add(n.op, {indices, table}), 0}, 0, d);
    }
    g.replace_uses({id, 0}, out);
    const NodeId p = n.inputs[0].node, r = n.inputs[1].node;
    g.remove(id);
    g.remove(p);
    g.remove(r);
  }
  return g;
}

// Table-wise placement: embedding table i on rank i % d (the mapping search may put them anywhere).
inline void spread_tables(const Graph& g, std::map<NodeId, MachineView>& views, int d) {
  int i = 0;
  for (NodeId id : g.topological_order())
    if (g.node(id).op.type == OpType::EmbeddingBag && g.node(id).outputs[0].num_pieces() == 1)
      views[id].start = i++ % d;
}

}  // namespace unity::executor::testing
