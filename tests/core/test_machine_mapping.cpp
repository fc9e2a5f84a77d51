// The machine-mapping dynamic program against exhaustive enumeration, and the views it chooses
// from.
#include <functional>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "random_graphs.h"
#include "unity/core/mapping/machine_mapping.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/strategies/data_parallel.h"
#include "unity/core/zoo/model_zoo.h"

using namespace unity;
using unity::testing::RandomSpGraph;

namespace {

// A small machine whose links differ, so that where tasks go matters: two nodes of two devices
// each, each node one island, or one node of four devices in two islands.
MachineSpec test_machine(int nodes, int per_node, int per_island) {
  MachineSpec m;
  m.name = "test";
  m.num_nodes = nodes;
  m.max_nodes = nodes;
  m.devices_per_node = per_node;
  m.devices_per_island = per_island;
  DeviceSpec d;
  d.name = "test-gpu";
  d.peak_flops_fp32 = 1e12;
  d.peak_flops_fp16 = 4e12;
  d.memory_bandwidth = 2e11;
  d.memory_bytes = std::int64_t{1} << 30;
  d.launch_latency = 2e-6;
  m.device_types = {d};
  m.intra_island = {"fast", 5e10, 1e-6};
  m.inter_island = {"medium", 1e10, 2e-6};
  m.inter_node = {"slow", 2e9, 5e-6};
  return m;
}

// Every division of resources the decomposition allows, with each placed node's block.
struct Layout {
  std::map<int, ParallelChoice> choices;
  std::map<NodeId, DeviceBlock> blocks;
};

void layouts(const MappingCost& costs, const SpDecomposition& sp, int index, DeviceBlock block,
             std::vector<Layout>& out) {
  const MachineSpec& m = costs.model().machine();
  const SpNode& part = sp.node(index);
  std::vector<Layout> result;
  auto cross = [](const std::vector<Layout>& a, const std::vector<Layout>& b) {
    std::vector<Layout> r;
    for (const auto& x : a)
      for (const auto& y : b) {
        Layout l = x;
        l.choices.insert(y.choices.begin(), y.choices.end());
        l.blocks.insert(y.blocks.begin(), y.blocks.end());
        r.push_back(l);
      }
    return r;
  };
  auto sub = [&](int i, DeviceBlock blk) {
    std::vector<Layout> v;
    if (i < 0) return std::vector<Layout>{Layout{}};
    layouts(costs, sp, i, blk, v);
    return v;
  };
  if (part.kind == SpNode::Kind::Leaf) {
    Layout l;
    l.blocks[part.node] = block;
    result.push_back(l);
  } else if (part.kind == SpNode::Kind::Series) {
    Layout self;
    self.blocks[part.node] = block;
    result = cross(cross({self}, sub(part.first, block)), sub(part.second, block));
  } else {
    for (auto l : cross(sub(part.first, block), sub(part.second, block))) {
      l.choices[index] = {0, true};
      result.push_back(l);
    }
    for (int k : parallel_divisions(m, block, max_tasks(costs, sp, part.first),
                                    max_tasks(costs, sp, part.second)))
      for (bool low : {true, false}) {
        const DeviceBlock a =
            low ? DeviceBlock{block.start, k} : DeviceBlock{block.start + block.size - k, k};
        const DeviceBlock b = low ? DeviceBlock{block.start + k, block.size - k}
                                  : DeviceBlock{block.start, block.size - k};
        for (auto l : cross(sub(part.first, a), sub(part.second, b))) {
          l.choices[index] = {k, low};
          result.push_back(l);
        }
      }
  }
  out.insert(out.end(), result.begin(), result.end());
}

double exhaustive_best(const MappingCost& costs, DeviceBlock block, std::size_t* mappings) {
  const SpDecomposition sp(costs.placement());
  std::vector<Layout> all;
  layouts(costs, sp, sp.root(), block, all);
  const auto& placed = costs.placement().placed();
  double best = std::numeric_limits<double>::infinity();
  for (const auto& layout : all) {
    std::vector<std::vector<MachineView>> options;
    for (NodeId id : placed)
      options.push_back(candidate_views(costs.extents(id), layout.blocks.at(id)));
    std::map<NodeId, MachineView> views;
    std::function<void(std::size_t)> rec = [&](std::size_t i) {
      if (i == placed.size()) {
        bool feasible = false;
        const auto c = evaluate_mapping(costs, sp, views, layout.choices, block, &feasible);
        ++*mappings;
        if (feasible) best = std::min(best, c.time());
        return;
      }
      for (const auto& v : options[i]) {
        views[placed[i]] = v;
        rec(i + 1);
      }
    };
    rec(0);
  }
  return best;
}

}  // namespace

TEST(MachineView, CandidatesAreLinearInDevicesAndDistinct) {
  for (int n : {4, 8, 16, 64, 192}) {
    const auto serial = candidate_views({}, {0, n});
    EXPECT_EQ(static_cast<int>(serial.size()), n);  // one per device
    const auto two = candidate_views({2}, {0, n});
    EXPECT_EQ(static_cast<int>(two.size()), n / 2 == 1 ? 1 : n);  // packed + spread starts
    const auto grid = candidate_views({2, 3}, {0, n});
    if (n % 6 == 0) {
      EXPECT_LE(static_cast<int>(grid.size()), 2 * 2 * n / 6);
    }
    for (const auto& v : grid) {
      auto devices = v.devices();
      std::sort(devices.begin(), devices.end());
      EXPECT_EQ(std::unique(devices.begin(), devices.end()), devices.end()) << v.to_string();
      EXPECT_LT(devices.back(), n);
    }
  }
  EXPECT_TRUE(candidate_views({8}, {0, 4}).empty());
}

TEST(MachineView, TaskOrderFollowsStrides) {
  MachineView v{6, {2, 3}, {1, 2}};  // first dim innermost
  EXPECT_EQ(v.devices(), (std::vector<int>{6, 8, 10, 7, 9, 11}));
  EXPECT_EQ(task_extents(ParallelTensorShape{{{64, 2}, {512, 1}, {7, 3}}, 4}),
            (std::vector<int>{2, 3, 4}));
}

TEST(MachineMapping, ResourceSplitsFollowNodesThenDevices) {
  const auto m = test_machine(2, 2, 2);
  EXPECT_EQ(resource_splits(m, {0, 4}), (std::vector<int>{2}));
  EXPECT_EQ(resource_splits(m, {0, 2}), (std::vector<int>{1}));
  EXPECT_TRUE(resource_splits(m, {3, 1}).empty());
}

TEST(MachineMapping, DynamicProgramEqualsExhaustiveEnumeration) {
  std::size_t total_mappings = 0;
  int compared = 0;
  for (unsigned seed = 1; seed <= 160; ++seed) {
    const int max_ops = 2 + static_cast<int>(seed % 7);  // 2..8 operators
    const Graph g = RandomSpGraph(seed, max_ops).build();
    ASSERT_NO_THROW(g.validate()) << "seed " << seed;
    const MachineSpec m = seed % 2 ? test_machine(2, 2, 2) : test_machine(1, 4, 2);
    const CostModel model(m);
    const MappingCost costs(g, model);
    ASSERT_LE(costs.placement().placed().size(), 8u);
    const MachineMapping dp = optimize_machine_mapping(costs);
    std::size_t mappings = 0;
    const double best = exhaustive_best(costs, {0, m.num_devices()}, &mappings);
    total_mappings += mappings;
    ASSERT_TRUE(dp.feasible) << "seed " << seed;
    EXPECT_NEAR(dp.cost.time(), best, 1e-12 + 1e-9 * best) << "seed " << seed;
    ++compared;
  }
  EXPECT_EQ(compared, 160);
  EXPECT_GT(total_mappings, 10000u);  // the enumeration really explored alternatives
}

// A graph that is not series-parallel: m is read after the split node s that joins it with p (an
// encoder's output read by every decoder layer, DenseNet's concatenations). The edge m -> r
// bypasses s; the DP leaves it out of the subproblems and adds its cost at the end, so it returns a
// mapping (it used to stop with "a boundary operator has no view") whose cost bounds the best one
// from above.
TEST(MachineMapping, LongEdgesOfAGraphThatIsNotSeriesParallelAreCostedOnce) {
  Graph g;
  GraphBuilder b(g);
  auto m = b.linear(b.input("a", {64, 256}), 256, "m", false);
  auto p = b.linear(b.input("b", {64, 256}), 256, "p", false);
  auto s = b.add(m, p, "s");
  auto q = b.linear(s, 256, "q", false);
  b.add(q, m, "r");
  for (const MachineSpec& machine : {test_machine(1, 2, 2), test_machine(2, 2, 2)}) {
    const CostModel model(machine);
    const MappingCost costs(g, model);
    MachineMapping dp;
    ASSERT_NO_THROW(dp = optimize_machine_mapping(costs));
    ASSERT_TRUE(dp.feasible);
    std::size_t mappings = 0;
    const double best = exhaustive_best(costs, {0, machine.num_devices()}, &mappings);
    EXPECT_GE(dp.cost.time(), best * (1 - 1e-9));
    EXPECT_LE(dp.cost.time(), 1.5 * best);
  }
}

TEST(MachineMapping, ParallelBranchesRunSideBySideWhenThatIsFaster) {
  // Two heavy independent branches of serial linear layers: on two devices they should split.
  Graph g;
  GraphBuilder b(g);
  auto x = b.input("x", {512, 512});
  auto a = b.linear(x, 512, "a", false);
  auto c = b.linear(x, 512, "c", false);
  b.add(a, c, "join");
  const auto m = test_machine(1, 2, 2);
  const CostModel model(m);
  const MappingCost costs(g, model);
  const auto mapping = optimize_machine_mapping(costs);
  ASSERT_TRUE(mapping.feasible);
  NodeId na = -1, nc = -1;
  for (const auto& [id, n] : g.nodes()) {
    if (n.op.name == "a") na = id;
    if (n.op.name == "c") nc = id;
  }
  EXPECT_NE(mapping.views.at(na).start, mapping.views.at(nc).start);
  const double serial =
      costs.node_cost(na, {0, {}, {}}).time() + costs.node_cost(nc, {0, {}, {}}).time();
  EXPECT_LT(mapping.cost.time(), serial);
}

// The search shares one cache between all its candidates (and between the joint and sequential
// searches): a subgraph, operator or edge solved for one graph may only answer for another where it
// costs the same. Each graph's estimate through a cache full of other graphs' parts must equal its
// estimate through an empty cache.
TEST(MachineMapping, ACacheSharedBetweenGraphsGivesEachItsOwnEstimate) {
  std::vector<Graph> graphs;
  for (unsigned seed = 1; seed <= 60; ++seed)
    graphs.push_back(RandomSpGraph(seed, 3 + static_cast<int>(seed % 6)).build());
  for (const char* name : {"mnist-mlp", "dlrm"})
    for (int d : {1, 2, 4}) graphs.push_back(make_data_parallel(zoo::build(name, 16), d));
  const CostModel model(test_machine(2, 2, 2));
  MappingCache shared;
  int reused = 0;  // graphs that found some of their parts solved
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    const MappingCost costs(graphs[i], model);
    MappingCache fresh;
    const MappingEstimate alone = estimate_machine_mapping(costs, &fresh);
    const MappingEstimate with_others = estimate_machine_mapping(costs, &shared);
    if (with_others.subproblems < alone.subproblems) ++reused;
    ASSERT_TRUE(alone.feasible) << "graph " << i;
    ASSERT_TRUE(with_others.feasible) << "graph " << i;
    EXPECT_NEAR(with_others.cost.time(), alone.cost.time(), 1e-12 * alone.cost.time())
        << "graph " << i;
    EXPECT_EQ(with_others.cost.bytes, alone.cost.bytes) << "graph " << i;
  }
  EXPECT_GE(reused, 20);  // the graphs really shared parts
}

// A collective between pods of the Llama 3 cluster (dgx-h100) runs at the oversubscribed layer's
// 50/7 GB/s per GPU, one inside a pod at the NIC's 50 GB/s. By hand, 1 GB over 2 GPUs, a ring of
// one step each way: bytes / bandwidth + 2 latencies.
TEST(CostModel, AnAllReduceAcrossPodsPaysTheOversubscribedLayer) {
  const CostModel model(load_machine("dgx-h100", {.nodes = 3072}));
  EXPECT_NEAR(model.allreduce_time({0, 8}, 1e9), 1e9 / 50e9 + 2 * 3e-6, 1e-9);
  EXPECT_NEAR(model.allreduce_time({0, 3072}, 1e9), 0.14 + 2 * 5e-6, 1e-8);
  // One GPU in each of the 8 pods: 2 x 7 ring steps of an eighth of the bytes each.
  std::vector<int> one_per_pod;
  for (int pod = 0; pod < 8; ++pod) one_per_pod.push_back(pod * 3072);
  EXPECT_NEAR(model.allreduce_time(one_per_pod, 1e9), 14 * (0.14 / 8 + 5e-6), 1e-8);
}
