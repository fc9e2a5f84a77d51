// `unity machines`: the preset table, its JSON, and one machine or machine file in detail.
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

TEST(MachinesCli, JsonListsThePresets) {
  const auto r = run_cli("machines --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = nlohmann::json::parse(r.out);
  std::set<std::string> names;
  for (const auto& row : rows) names.insert(row.at("name").get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"summit", "dgx-a100", "selene", "dgx-h100", "dgx-h200",
                                          "dgx-b200", "gb200-nvl72", "pcie-4gpu", "cpu-local"}));
  for (const auto& row : rows) {
    if (row["name"] == "summit") {
      EXPECT_EQ(row["max_nodes"], 4608);
      EXPECT_EQ(row["devices_per_node"], 6);
      EXPECT_EQ(row["devices_per_island"], 3);
      EXPECT_FALSE(row.contains("nodes_per_pod"));
    }
    if (row["name"] == "dgx-h100") {
      EXPECT_EQ(row["nodes_per_pod"], 384);
      EXPECT_NEAR(row["inter_pod"]["bandwidth"].get<double>(), 50e9 / 7, 1e3);
      EXPECT_EQ(row["device_types"][0]["peak_flops_fp8"], 1979e12);
    }
  }
}

// One machine in detail names its pods and the link between them.
TEST(MachinesCli, DetailShowsPodsAndFp8) {
  const auto r = run_cli("machines dgx-h100 --gpus 16384");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* text : {"2048 of 3072", "16384 GPUs in use",
                           "384 nodes each (3072 GPUs), 8 pods", "1979 TFLOP/s fp8", "inter-pod",
                           "7.143 GB/s", "large GEMMs at 0.600 of peak (0.548 in fp8)"})
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
}

TEST(MachinesCli, TableShowsDevicesAndLinks) {
  const auto r = run_cli("machines");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* text : {"summit", "V100", "A100", "H100", "cpu-local", "fp32 TFLOP/s",
                           "inter-node", "50 GB/s", "12.5 GB/s"})
    EXPECT_NE(r.out.find(text), std::string::npos) << text << " in\n" << r.out;
}

TEST(MachinesCli, OneMachineWithASelection) {
  const auto r = run_cli("machines summit --gpus 12");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 of 4608"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("X-Bus"), std::string::npos) << r.out;

  const auto j = run_cli("machines summit --devices 4 --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto m = nlohmann::json::parse(j.out);
  EXPECT_EQ(m["num_nodes"], 1);
  EXPECT_EQ(m["devices_per_node"], 4);

  const auto seven = run_cli("machines summit --gpus 7");
  EXPECT_EQ(seven.exit_code, 1);
  EXPECT_NE(seven.err.find("--gpus 7"), std::string::npos) << seven.err;
  EXPECT_TRUE(seven.out.empty());

  const auto unknown = run_cli("machines no-such-machine");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("no-such-machine"), std::string::npos);
}

TEST(MachinesCli, BadMachineFileNamesTheField) {
  const auto path =
      std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "_bad_machine.json");
  auto summit = nlohmann::json::parse(run_cli("machines summit --json").out);
  summit["inter_node"]["bandwidth"] = -5;
  std::ofstream(path) << summit.dump(2);
  const auto r = run_cli("machines " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("inter_node.bandwidth must be positive"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());

  summit["inter_node"]["bandwidth"] = 25e9;
  std::ofstream(path) << summit.dump(2);
  const auto ok = run_cli("machines " + path.string() + " --json");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  std::filesystem::remove(path);

  // A path that names no file says so; a mistyped preset lists the presets.
  const auto missing = run_cli("machines " + path.string());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("nor a machine .json file (no such file)"), std::string::npos)
      << missing.err;
  const auto typo = run_cli("machines dgx-h1000");
  EXPECT_EQ(typo.exit_code, 1);
  EXPECT_NE(typo.err.find("not a preset (summit, "), std::string::npos) << typo.err;
  EXPECT_EQ(typo.err.find("no such file"), std::string::npos) << typo.err;
}
