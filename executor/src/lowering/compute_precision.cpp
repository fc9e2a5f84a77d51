#include "unity/executor/compute_precision.h"

#include "unity/core/pcg/compute_dtype.h"

namespace unity::executor {

Graph executed_graph(const Graph& plan_graph) {
  Graph g = plan_graph;
  if (compute_dtype(g) != DataType::Float32) set_compute_dtype(g, DataType::Float32);
  return g;
}

std::string plan_dtype(const Graph& plan_graph) {
  return std::string(to_string(compute_dtype(plan_graph)));
}

}  // namespace unity::executor
