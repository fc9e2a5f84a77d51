// The machine model: presets, topology queries, the machine file format and its errors, and the
// --nodes / --gpus selection.
#include <unistd.h>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "unity/core/errors.h"
#include "unity/core/machine/machine_spec.h"

using namespace unity;
using nlohmann::json;

namespace {

// The message of the InputError `f` throws, or "no error".
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

json summit_json() { return machine_to_json(load_machine("summit")); }

void expect_same(const MachineSpec& a, const MachineSpec& b) {
  EXPECT_EQ(machine_to_json(a), machine_to_json(b));
}

}  // namespace

TEST(MachinePresets, ListsThePresetsInOrder) {
  EXPECT_EQ(machine_preset_names(),
            (std::vector<std::string>{"summit", "dgx-a100", "selene", "dgx-h100", "dgx-h200",
                                      "dgx-b200", "gb200-nvl72", "pcie-4gpu", "cpu-local"}));
}

TEST(MachinePresets, EveryPresetLoadsValidatesAndRoundTrips) {
  for (const auto& name : machine_preset_names()) {
    SCOPED_TRACE(name);
    const MachineSpec m = load_machine(name);
    EXPECT_EQ(m.name, name);
    EXPECT_EQ(m.num_nodes, 1);
    EXPECT_FALSE(m.source.empty());
    EXPECT_NO_THROW(validate_machine(m));
    const MachineSpec back = machine_from_json(machine_to_json(m));
    expect_same(m, back);
    // Through text too, as a project file or a plan stores it.
    expect_same(m, machine_from_json(json::parse(machine_to_json(m).dump())));
  }
}

TEST(MachinePresets, SummitFiguresMatchThePaper) {
  const MachineSpec m = load_machine("summit");
  EXPECT_EQ(m.max_nodes, 4608);
  EXPECT_EQ(m.devices_per_node, 6);
  EXPECT_EQ(m.islands_per_node(), 2);
  EXPECT_EQ(m.island_size(), 3);
  EXPECT_DOUBLE_EQ(m.device(0).peak_flops_fp32, 15.7e12);
  EXPECT_DOUBLE_EQ(m.device(0).peak_flops_fp16, 125e12);
  EXPECT_EQ(m.device(0).memory_bytes, std::int64_t{16} << 30);
  EXPECT_GT(m.intra_island.bandwidth, m.inter_island.bandwidth);
  EXPECT_GT(m.inter_island.bandwidth, m.inter_node.bandwidth);
}

// The clusters of 2026, each figure from its datasheet (docs/machines.md): dense peaks per dtype,
// memory, and the NVLink domain.
TEST(MachinePresets, CurrentClustersCarryTheirDatasheetFigures) {
  const MachineSpec h100 = load_machine("dgx-h100");
  EXPECT_EQ(h100.max_nodes * h100.devices_per_node, 24576);  // the Llama 3 cluster
  EXPECT_DOUBLE_EQ(h100.device(0).peak_flops(DataType::BFloat16), 989e12);
  EXPECT_DOUBLE_EQ(h100.device(0).peak_flops_fp8, 1979e12);

  const MachineSpec h200 = load_machine("dgx-h200");
  EXPECT_EQ(h200.device(0).memory_bytes, 141'000'000'000);
  EXPECT_DOUBLE_EQ(h200.device(0).memory_bandwidth, 4.8e12);
  EXPECT_DOUBLE_EQ(h200.device(0).peak_flops(DataType::BFloat16), 989e12);

  const MachineSpec b200 = load_machine("dgx-b200");
  EXPECT_DOUBLE_EQ(b200.device(0).peak_flops(DataType::BFloat16), 2.25e15);
  EXPECT_DOUBLE_EQ(b200.device(0).peak_flops_fp8, 4.5e15);
  EXPECT_DOUBLE_EQ(b200.intra_island.bandwidth, 900e9);

  // One NVLink domain of 72 GPUs: any two GPUs of a rack talk over NVLink, racks over the NICs.
  const MachineSpec nvl72 = load_machine("gb200-nvl72", {.nodes = 2});
  EXPECT_EQ(nvl72.devices_per_node, 72);
  EXPECT_EQ(&nvl72.link(0, 71), &nvl72.intra_island);
  EXPECT_EQ(&nvl72.link(0, 72), &nvl72.inter_node);
  EXPECT_EQ(load_machine("gb200-nvl72", {.devices = 36}).num_devices(), 36);
}

// Pods of nodes: full bisection bandwidth inside a pod, the oversubscribed layer between pods.
TEST(MachineSpec, PodsOfTheLlama3Cluster) {
  const MachineSpec all = load_machine("dgx-h100", {.nodes = 3072});
  EXPECT_EQ(all.num_devices(), 24576);
  EXPECT_EQ(all.nodes_per_pod * all.devices_per_node, 3072);
  EXPECT_EQ(all.pod_of(3071), 0);
  EXPECT_EQ(all.pod_of(3072), 1);
  EXPECT_EQ(&all.link(0, 8), &all.inter_node);     // another node of the pod
  EXPECT_EQ(&all.link(0, 3071), &all.inter_node);  // the pod's last GPU
  EXPECT_EQ(&all.link(0, 3072), &all.inter_pod);   // the next pod's first
  EXPECT_EQ(&all.link(24575, 0), &all.inter_pod);
  // 1:7 oversubscription: a seventh of the NIC's 50 GB/s between pods.
  EXPECT_NEAR(all.inter_pod.bandwidth, 50e9 / 7, 1e3);
  // A sub-cluster within one pod never pays for the top layer.
  const MachineSpec one_pod = load_machine("dgx-h100", {.nodes = 384});
  for (int d : {8, 100, 3071}) EXPECT_EQ(&one_pod.link(0, d), &one_pod.inter_node);
}

TEST(MachineSpec, SummitTopology) {
  const MachineSpec m = load_machine("summit", {.nodes = 2});
  ASSERT_EQ(m.num_devices(), 12);
  EXPECT_EQ(m.island_of(0), 0);
  EXPECT_EQ(m.island_of(2), 0);
  EXPECT_EQ(m.island_of(3), 1);
  EXPECT_EQ(m.island_of(6), 2);
  EXPECT_EQ(m.island_of(11), 3);
  EXPECT_EQ(m.node_of(6), 1);
  EXPECT_NE(m.link(0, 1).name.find("NVLink"), std::string::npos);
  EXPECT_NE(m.link(0, 3).name.find("X-Bus"), std::string::npos);
  EXPECT_EQ(&m.link(0, 3), &m.inter_island);
  EXPECT_EQ(&m.link(4, 5), &m.intra_island);
  EXPECT_EQ(&m.link(0, 6), &m.inter_node);
  EXPECT_NE(m.link(0, 6).name.find("InfiniBand"), std::string::npos);
  EXPECT_EQ(&m.link(2, 3), &m.link(3, 2));
  EXPECT_THROW(m.device(12), std::out_of_range);
  EXPECT_THROW(m.link(0, -1), std::out_of_range);
}

TEST(MachineSpec, OneIslandNodesUseIntraIslandInsideANode) {
  const MachineSpec m = load_machine("dgx-a100", {.devices = 16});
  EXPECT_EQ(m.num_nodes, 2);
  EXPECT_EQ(m.islands_per_node(), 1);
  EXPECT_EQ(&m.link(0, 7), &m.intra_island);
  EXPECT_EQ(&m.link(7, 8), &m.inter_node);
  EXPECT_EQ(m.island_of(8), 1);
}

TEST(MachineSpec, HeterogeneousNodes) {
  json j = summit_json();
  j["max_nodes"] = 3;
  j["device_types"].push_back(j["device_types"][0]);
  j["device_types"][1]["name"] = "slow GPU";
  j["device_types"][1]["peak_flops_fp32"] = 1e12;
  j["node_device_type"] = {0, 1, 0};
  const MachineSpec m = select_machine(machine_from_json(j), {.nodes = 3});
  EXPECT_EQ(m.device(5).name, "NVIDIA V100-SXM2-16GB");
  EXPECT_EQ(m.device(6).name, "slow GPU");
  EXPECT_EQ(m.device(12).name, "NVIDIA V100-SXM2-16GB");
  j["node_device_type"] = {0, 2, 0};
  EXPECT_NE(error_of([&] { machine_from_json(j); }).find("node_device_type[1]"), std::string::npos);
  j["node_device_type"] = {0, 1};
  EXPECT_NE(error_of([&] { machine_from_json(j); }).find("node_device_type"), std::string::npos);
}

TEST(MachineSelection, NodesAndGpus) {
  EXPECT_EQ(load_machine("summit").num_devices(), 6);
  EXPECT_EQ(load_machine("summit", {.nodes = 16}).num_devices(), 96);

  const MachineSpec twelve = load_machine("summit", {.devices = 12});
  EXPECT_EQ(twelve.num_nodes, 2);
  EXPECT_EQ(twelve.devices_per_node, 6);
  EXPECT_EQ(twelve.devices_per_island, 3);

  // Four GPUs of one node: two per socket, so islands stay whole.
  const MachineSpec four = load_machine("summit", {.devices = 4});
  EXPECT_EQ(four.num_nodes, 1);
  EXPECT_EQ(four.num_devices(), 4);
  EXPECT_EQ(four.devices_per_island, 2);
  EXPECT_EQ(&four.link(0, 1), &four.intra_island);
  EXPECT_EQ(&four.link(1, 2), &four.inter_island);

  // Three or fewer fit one socket: one island.
  const MachineSpec three = load_machine("summit", {.devices = 3});
  EXPECT_EQ(three.islands_per_node(), 1);
  EXPECT_EQ(load_machine("summit", {.devices = 1}).num_devices(), 1);
  // Five do not split evenly over two sockets: the cross-socket link is the one to cost.
  const MachineSpec five = load_machine("summit", {.devices = 5});
  EXPECT_EQ(five.num_devices(), 5);
  EXPECT_EQ(&five.link(0, 4), &five.inter_island);

  EXPECT_EQ(load_machine("summit", {.nodes = 2, .devices = 12}).num_devices(), 12);
  EXPECT_EQ(load_machine("summit", {.nodes = 1, .devices = 4}).num_devices(), 4);
  EXPECT_EQ(load_machine("summit", {.devices = 4608 * 6}).num_nodes, 4608);
}

// More devices than a node that are not a multiple of it take an equal share of the fewest nodes
// that hold them: 256 GPUs of GB200 NVL72 racks are 4 racks of 64, as NVIDIA's runs on 256 GB200
// are laid out.
TEST(MachineSelection, AnEqualShareOfTheFewestNodes) {
  const MachineSpec racks = load_machine("gb200-nvl72", {.devices = 256});
  EXPECT_EQ(racks.num_nodes, 4);
  EXPECT_EQ(racks.devices_per_node, 64);
  EXPECT_EQ(&racks.link(0, 63), &racks.intra_island);
  EXPECT_EQ(&racks.link(63, 64), &racks.inter_node);

  const MachineSpec twelve = load_machine("dgx-h100", {.devices = 12});
  EXPECT_EQ(twelve.num_nodes, 2);
  EXPECT_EQ(twelve.devices_per_node, 6);
  // A multiple of the node takes whole nodes, as before.
  EXPECT_EQ(load_machine("gb200-nvl72", {.devices = 144}).devices_per_node, 72);

  // 7 summit GPUs do not split evenly over the 2 nodes that hold them.
  const std::string seven = error_of([] { load_machine("summit", {.devices = 7}); });
  EXPECT_NE(seven.find("do not split evenly over 2 nodes"), std::string::npos) << seven;
}

TEST(MachineSelection, ErrorsNameTheFlag) {
  const std::string seven = error_of([] { load_machine("summit", {.devices = 7}); });
  EXPECT_NE(seven.find("--gpus 7"), std::string::npos) << seven;
  EXPECT_NE(seven.find("4608 nodes of 6 GPUs"), std::string::npos) << seven;

  const std::string nodes = error_of([] { load_machine("summit", {.nodes = 5000}); });
  EXPECT_NE(nodes.find("--nodes 5000"), std::string::npos) << nodes;

  const std::string many = error_of([] { load_machine("summit", {.devices = 4609 * 6}); });
  EXPECT_NE(many.find("more GPUs than the machine has"), std::string::npos) << many;

  const std::string disagree =
      error_of([] { load_machine("summit", {.nodes = 3, .devices = 12}); });
  EXPECT_NE(disagree.find("--nodes 3"), std::string::npos) << disagree;
  EXPECT_NE(error_of([] { load_machine("summit", {.nodes = 2, .devices = 4}); }), "no error");
  EXPECT_NE(error_of([] { load_machine("pcie-4gpu", {.nodes = 2}); }), "no error");
  EXPECT_NE(error_of([] { load_machine("dgx-h100", {.devices = 3073 * 8}); }), "no error");
  EXPECT_NE(error_of([] { load_machine("summit", {.nodes = -1}); }), "no error");

  const std::string unknown = error_of([] { load_machine("no-such-machine"); });
  EXPECT_NE(unknown.find("no-such-machine"), std::string::npos);
  EXPECT_NE(unknown.find("summit"), std::string::npos) << "lists the presets: " << unknown;
}

TEST(MachineSelection, CpuLocalRanks) {
  const MachineSpec two = load_machine("cpu-local");
  EXPECT_EQ(two.num_devices(), 2);
  EXPECT_EQ(two.device(0).kind, "cpu");
  // Ranks may outnumber the cores (oversubscription) and share the RAM.
  const MachineSpec many = load_machine("cpu-local", {.devices = 64});
  EXPECT_EQ(many.num_devices(), 64);
  EXPECT_EQ(many.num_nodes, 1);
  EXPECT_LT(many.device(0).memory_bytes, two.device(0).memory_bytes);
  EXPECT_NEAR(static_cast<double>(many.device(0).memory_bytes) * 64,
              static_cast<double>(two.device(0).memory_bytes) * 2, 64.0);
  EXPECT_EQ(load_machine("cpu-local", {.nodes = 1, .devices = 3}).num_devices(), 3);
  EXPECT_NE(error_of([] { load_machine("cpu-local", {.devices = 257}); }), "no error");
  EXPECT_NE(error_of([] { load_machine("cpu-local", {.nodes = 2}); }), "no error");
}

TEST(MachineJson, ErrorsNameTheField) {
  auto message = [](const json& j) { return error_of([&] { machine_from_json(j); }); };
  json j = summit_json();

  json missing = j;
  missing["inter_node"].erase("bandwidth");
  EXPECT_NE(message(missing).find("inter_node.bandwidth"), std::string::npos) << message(missing);
  missing = j;
  missing.erase("devices_per_node");
  EXPECT_NE(message(missing).find("devices_per_node"), std::string::npos);
  missing = j;
  missing["device_types"][0].erase("memory_bytes");
  EXPECT_NE(message(missing).find("device_types[0].memory_bytes"), std::string::npos);
  missing = j;
  missing.erase("inter_island");  // two islands per node: the link between them is needed
  EXPECT_NE(message(missing).find("inter_island"), std::string::npos);

  json negative = j;
  negative["inter_node"]["bandwidth"] = -5;
  EXPECT_EQ(message(negative), "machine 'summit': inter_node.bandwidth must be positive, got -5");
  negative = j;
  negative["intra_island"]["latency"] = -1e-6;
  EXPECT_NE(message(negative).find("intra_island.latency"), std::string::npos);
  negative = j;
  negative["device_types"][0]["peak_flops_fp16"] = 0;
  EXPECT_NE(message(negative).find("device_types[0].peak_flops_fp16"), std::string::npos);
  negative = j;
  negative["device_types"][0]["memory_bytes"] = 0;
  EXPECT_NE(message(negative).find("memory_bytes"), std::string::npos);

  json more = j;
  more["num_nodes"] = 5000;
  EXPECT_NE(message(more).find("num_nodes"), std::string::npos) << message(more);
  EXPECT_NE(message(more).find("max_nodes 4608"), std::string::npos) << message(more);

  json islands = j;
  islands["devices_per_island"] = 4;
  EXPECT_NE(message(islands).find("devices_per_island"), std::string::npos);
  json typo = j;
  typo["inter_node"]["bandwith"] = 1e9;
  EXPECT_NE(message(typo).find("inter_node.bandwith"), std::string::npos);
  json wrong_type = j;
  wrong_type["max_nodes"] = "many";
  EXPECT_NE(message(wrong_type).find("max_nodes"), std::string::npos);
  json kind = j;
  kind["device_types"][0]["kind"] = "tpu";
  EXPECT_NE(message(kind).find("device_types[0].kind"), std::string::npos);
  EXPECT_NE(message(json::array()).find("JSON object"), std::string::npos);
}

TEST(MachineJson, OptionalFieldsDefault) {
  json j = summit_json();
  j.erase("num_nodes");
  j.erase("description");
  j["device_types"][0].erase("compute_efficiency");
  j["devices_per_island"] = 0;
  j.erase("inter_island");  // one island per node: not needed
  j["note"] = "comments are allowed";
  const MachineSpec m = machine_from_json(j);
  EXPECT_EQ(m.num_nodes, 1);
  EXPECT_DOUBLE_EQ(m.device(0).compute_efficiency, DeviceSpec{}.compute_efficiency);
  EXPECT_EQ(m.inter_island.name, m.intra_island.name);
  // No pods: the whole cluster is one, and inter_pod is never asked for.
  EXPECT_EQ(m.nodes_per_pod, 0);
  EXPECT_EQ(m.pod_of(m.num_devices() - 1), 0);
  EXPECT_DOUBLE_EQ(m.device(0).peak_flops_fp8, 0);
}

TEST(MachineJson, PodsNeedTheirLinkAndDivideTheCluster) {
  auto message = [](const json& j) { return error_of([&] { machine_from_json(j); }); };
  json j = summit_json();  // 4,608 nodes
  j["nodes_per_pod"] = 512;
  EXPECT_EQ(message(j), "machine 'summit': missing field 'inter_pod'");
  j["inter_pod"] = {{"name", "spine"}, {"bandwidth", 2e9}, {"latency", 5e-6}};
  const MachineSpec m = machine_from_json(j);
  EXPECT_EQ(m.nodes_per_pod, 512);
  EXPECT_DOUBLE_EQ(m.inter_pod.bandwidth, 2e9);
  expect_same(m, machine_from_json(machine_to_json(m)));
  j["nodes_per_pod"] = 500;
  EXPECT_EQ(message(j), "machine 'summit': nodes_per_pod 500 must divide max_nodes 4608");
  j["nodes_per_pod"] = -1;
  EXPECT_NE(message(j).find("nodes_per_pod must not be negative"), std::string::npos);
  j["nodes_per_pod"] = 512;
  j["inter_pod"]["bandwidth"] = 0;
  EXPECT_EQ(message(j), "machine 'summit': inter_pod.bandwidth must be positive, got 0");
  j["inter_pod"]["bandwidth"] = 2e9;
  j["device_types"][0]["peak_flops_fp8"] = -1;
  EXPECT_NE(message(j).find("device_types[0].peak_flops_fp8"), std::string::npos);
}

TEST(MachineJson, LoadsAMachineFile) {
  const auto path =
      std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "_machine_test.json");
  json j = summit_json();
  j["name"] = "my-cluster";
  j["max_nodes"] = 4;
  std::ofstream(path) << j.dump(2);
  const MachineSpec m = load_machine(path.string(), {.devices = 24});
  EXPECT_EQ(m.name, "my-cluster");
  EXPECT_EQ(m.num_nodes, 4);
  const std::string too_many = error_of([&] { load_machine(path.string(), {.devices = 30}); });
  EXPECT_NE(too_many.find("more GPUs than the machine has"), std::string::npos) << too_many;

  std::ofstream(path) << "{ not json";
  EXPECT_NE(error_of([&] { load_machine(path.string()); }).find("not valid JSON"),
            std::string::npos);
  std::filesystem::remove(path);
}
