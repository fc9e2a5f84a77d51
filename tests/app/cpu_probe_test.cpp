// cpu-local's figures for this computer (projects/include/unity/use_cases/cpu_probe.h), without
// measuring anything: a kept probe round-trips, is what the next plan for cpu-local uses (its
// figures and a source that says when they were measured), ranks beyond the cores share them,
// and UNITY_CPU_LOCAL=nominal keeps the shipped figures.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/use_cases/calibrate.h"
#include "unity/use_cases/cpu_probe.h"

namespace fs = std::filesystem;

namespace unity::use_cases {
namespace {

// A cache folder of the test's own (XDG_CACHE_HOME), removed afterwards; UNITY_CPU_LOCAL unset.
class CpuProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("unity_cpu_probe_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
    ::unsetenv("UNITY_CPU_LOCAL");
  }
  void TearDown() override {
    ::unsetenv("XDG_CACHE_HOME");
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  // A probe of this computer with round figures, kept where cpu_probe looks for it.
  CpuProbe keep_probe(int ranks) {
    CpuProbe p;
    p.cpu = this_cpu();
    p.ranks = ranks;
    p.date = "2026-01-02 03:04 UTC";
    p.seconds = 0.5;
    p.calibration.ranks = ranks;
    p.calibration.gemm_flops = p.calibration.solo_gemm_flops = 20e9;
    p.calibration.memory_bandwidth = 8e9;
    p.calibration.launch_latency = 2e-7;
    p.calibration.links_measured = ranks > 1;
    p.calibration.link_bandwidth = 4e9;
    p.calibration.link_latency = 1e-6;
    const fs::path file = cpu_probe_file(p.cpu, ranks);
    EXPECT_EQ(file.parent_path(), dir_ / "unity");
    fs::create_directories(file.parent_path());
    write_text_file_atomic(file, cpu_probe_to_json(p).dump(2));
    return p;
  }

  fs::path dir_;
};

TEST_F(CpuProbeTest, AProbeRoundTripsThroughJson) {
  const CpuProbe p = keep_probe(1);
  const CpuProbe q = cpu_probe_from_json(read_json_file(cpu_probe_file(p.cpu, 1)));
  EXPECT_EQ(q.cpu.host, p.cpu.host);
  EXPECT_EQ(q.cpu.model, p.cpu.model);
  EXPECT_EQ(q.cpu.cores, p.cpu.cores);
  EXPECT_EQ(q.ranks, 1);
  EXPECT_EQ(q.date, p.date);
  EXPECT_DOUBLE_EQ(q.calibration.gemm_flops, 20e9);
  EXPECT_DOUBLE_EQ(q.calibration.memory_bandwidth, 8e9);
  EXPECT_THROW(cpu_probe_from_json(nlohmann::json{{"format", "something else"}}), InputError);
}

TEST_F(CpuProbeTest, PlansForCpuLocalUseTheKeptProbe) {
  keep_probe(1);
  const CpuProbe read = cpu_probe(1);  // read, not measured: the file is this computer's
  EXPECT_TRUE(read.from_cache);
  const MachineSpec m = machine_for(nullptr, "cpu-local", {0, 1});
  EXPECT_EQ(m.name, "cpu-local");
  const DeviceSpec& d = m.device_types.at(0);
  EXPECT_DOUBLE_EQ(d.peak_flops_fp32, 20e9);
  EXPECT_DOUBLE_EQ(d.compute_efficiency, 1.0);
  EXPECT_DOUBLE_EQ(d.memory_bandwidth, 8e9);
  EXPECT_DOUBLE_EQ(d.launch_latency, 2e-7);
  EXPECT_TRUE(d.skips_data_gradients);
  EXPECT_TRUE(d.lowers_convolutions_through_memory);
  EXPECT_EQ(cpu_figures_of(m), CpuFigures::Probed);
  EXPECT_EQ(m.source.rfind("measured on this machine 2026-01-02 03:04 UTC", 0), 0u) << m.source;
  EXPECT_NE(describe_cpu_figures(m).find("measured on this machine"), std::string::npos);
  // Other machines are not touched.
  EXPECT_FALSE(cpu_figures_of(machine_for(nullptr, "summit", {0, 2})));
}

TEST_F(CpuProbeTest, MoreRanksThanCoresShareTheMeasuredFigures) {
  const int cores = this_cpu().cores;
  const CpuProbe p = keep_probe(probed_ranks(4 * cores, this_cpu()));
  EXPECT_EQ(p.ranks, cores);
  const MachineSpec m = probed_cpu_local(p, {0, 4 * cores});
  EXPECT_EQ(m.num_devices(), 4 * cores);
  EXPECT_DOUBLE_EQ(m.device_types.at(0).peak_flops_fp32, 20e9 / 4);
  EXPECT_DOUBLE_EQ(m.device_types.at(0).memory_bandwidth, 8e9 / 4);
  if (cores > 1) {
    EXPECT_DOUBLE_EQ(m.intra_island.bandwidth, 4e9 / 4);
  }
  // As many ranks as measured: the figures as they are.
  EXPECT_DOUBLE_EQ(probed_cpu_local(p, {0, cores}).device_types.at(0).peak_flops_fp32, 20e9);
}

TEST_F(CpuProbeTest, NominalKeepsTheShippedFigures) {
  keep_probe(1);
  ::setenv("UNITY_CPU_LOCAL", "nominal", 1);
  const MachineSpec m = machine_for(nullptr, "cpu-local", {0, 1});
  const MachineSpec shipped = load_machine("cpu-local", {0, 1});
  EXPECT_EQ(machine_to_json(m), machine_to_json(shipped));
  EXPECT_EQ(cpu_figures_of(m), CpuFigures::Nominal);
  EXPECT_EQ(describe_cpu_figures(m).rfind("nominal", 0), 0u);
  ::setenv("UNITY_CPU_LOCAL", "fast", 1);
  EXPECT_THROW(machine_for(nullptr, "cpu-local", {0, 1}), InputError);
}

// A kept file that describes another computer (a home folder shared between machines) is
// measured again and replaced: one rank, measured in this process (some 0.5 s).
TEST_F(CpuProbeTest, AnotherComputersProbeIsMeasuredAgain) {
  CpuProbe p = keep_probe(1);
  p.cpu.host += "-elsewhere";
  const fs::path file = cpu_probe_file(this_cpu(), 1);
  write_text_file_atomic(file, cpu_probe_to_json(p).dump(2));
  const CpuProbe q = cpu_probe(1);
  EXPECT_FALSE(q.from_cache);
  EXPECT_EQ(q.file, file);
  EXPECT_GT(q.calibration.gemm_flops, 0);
  EXPECT_EQ(cpu_probe_from_json(read_json_file(file)).cpu.host, this_cpu().host);
  EXPECT_TRUE(cpu_probe(1).from_cache);
}

}  // namespace
}  // namespace unity::use_cases
