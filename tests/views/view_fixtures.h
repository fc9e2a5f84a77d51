#pragma once
// Real models, machines and plans for the view suites (never mock data).
#include <QtTest>

#include <memory>
#include <set>
#include <tuple>

#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/views/explorer_document.h"
#include "unity/views/graph_view.h"

namespace unity::views::testing {

inline std::shared_ptr<const Plan> makePlan(const Graph& model, const MachineSpec& machine,
                                            const std::string& mode, std::int64_t budget = 200) {
  OptimizeOptions o;
  o.mode = mode;
  o.budget = budget;
  return std::make_shared<const Plan>(optimize_plan(model, machine, o));
}

// A document with `model` (zoo name, built for the machine's devices) on `machine`.
inline void openIn(ExplorerDocument& doc, const std::string& model, const std::string& machine,
                   MachineSelection selection) {
  auto m = std::make_shared<const MachineSpec>(load_machine(machine, selection));
  doc.setMachine(m, QString::fromStdString(machine), selection);
  doc.setModel(std::make_shared<const Graph>(load_model_for_devices(model, m->num_devices())),
               QString::fromStdString(model));
}

// The paper's Figure 1 MLP with 64 samples in all on two CPU ranks (the core's Figure 2 test).
inline void openFigure1(ExplorerDocument& doc) {
  auto machine = std::make_shared<const MachineSpec>(load_machine("cpu-local", {0, 2}));
  doc.setMachine(machine, "cpu-local", {0, 2});
  doc.setModel(std::make_shared<const Graph>(zoo::build("mnist-mlp", 64)), "mnist-mlp");
}

// Distinct producer-tensor -> consumer pairs: the edges a fully expanded drawing has.
inline int distinctEdges(const Graph& g) {
  std::set<std::tuple<NodeId, NodeId, int>> edges;
  for (const auto& [id, n] : g.nodes())
    for (const TensorRef& in : n.inputs) edges.insert({in.node, id, in.index});
  return int(edges.size());
}

inline bool waitForLayout(const GraphView& view, int timeoutMs = 120000) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < timeoutMs) {
    if (!view.layoutPending() && view.layout()) return true;
    QTest::qWait(10);
  }
  return false;
}

}  // namespace unity::views::testing
