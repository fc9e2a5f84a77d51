#pragma once
// Measuring this machine for the cost model (`unity calibrate --backend cpu`). Every rank of the
// run measures at the same time, as a training run would use them: GEMM throughput, streaming
// memory bandwidth, the executor's fixed cost per operator, and (with two or more ranks) the
// latency and bandwidth of the all-reduces and messages between ranks. The result becomes a machine
// file in the format of docs/machines.md, cpu-local sized to the ranks measured, that `unity
// optimize --machine` and `unity run --machine` use for their predictions.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "unity/core/machine/machine_spec.h"
#include "unity/executor/communicator.h"
#include "unity/executor/device_backend.h"

namespace unity::executor {

struct Calibration {
  std::string backend = "cpu";
  int ranks = 1;
  double gemm_flops = 0;       // FLOP/s of one rank running GEMMs of training-sized layers
  double solo_gemm_flops = 0;  // the same with the other ranks idle (quick: not measured, equal)
  // How much slower one rank computes when every rank computes at once (measured operator profiles,
  // taken by one process alone, are scaled by it).
  double slowdown() const {
    return gemm_flops > 0 && solo_gemm_flops > gemm_flops ? solo_gemm_flops / gemm_flops : 1.0;
  }
  double memory_bandwidth = 0;  // bytes/s of one rank streaming through memory
  double launch_latency = 0;    // seconds the executor spends per operator task beyond its kernel
  double transcendental_seconds = 0;  // seconds per sigmoid value (an exp), in cache
  double erf_seconds = 0;             // seconds per GELU value (an erf), in cache
  // Seconds per multiply-add of the executor's direct depthwise convolution (a 3x3 over 32
  // channels of 28 x 28), in cache: DeviceSpec::depthwise_mac_seconds.
  double depthwise_mac_seconds = 0;
  // (FLOPs of one product, FLOP/s) of a training step's GEMMs at sizes from 0.26 to 134 MFLOP (537
  // with the full measurement), ascending: DeviceSpec::gemm_rates.
  std::vector<std::pair<double, double>> gemm_rates;
  // Per optimizer, (parameters, seconds a parameter) of the executor's update at a size that stays
  // in a core's cache and one that does not: DeviceSpec::update_rates.
  std::map<std::string, std::vector<std::pair<double, double>>> update_rates;
  bool links_measured = false;
  double link_bandwidth = 0;  // bytes/s between two ranks, as all-reduces see it
  double link_latency = 0;    // seconds per message step
  std::vector<std::pair<std::string, double>> details;  // every raw measurement, for the record
};

struct CalibrationOptions {
  double seconds = 0.25;  // per measurement (each repeats until this long, then takes the median)
  // The quick probe cpu-local's first plan on a machine runs (use_cases/cpu_probe.h): the same
  // measurements, less of them: GEMMs at five shapes, not six, with every rank at once and not
  // also alone (slowdown() is then 1), and all-reduces at three sizes, not six. GEMMs, streaming
  // and GELU are the median of 2 ms batches of each rank's thread CPU time, not of 20 ms batches
  // of wall time (no more ranks than cores: time other processes hold the cores is left out).
  bool quick = false;
};

// Collective: every rank calls it; every rank gets the same result (the slowest rank's figures).
Calibration calibrate(DeviceBackend& backend, Communicator& comm,
                      const CalibrationOptions& options = {});

nlohmann::json calibration_to_json(const Calibration& c);
Calibration calibration_from_json(const nlohmann::json& j);  // throws InputError naming the field

// cpu-local with one node of c.ranks ranks and the measured figures (efficiencies 1: the measured
// rates are what kernels reach). Memory per rank: this machine's RAM / ranks.
MachineSpec calibrated_machine(const Calibration& c);

}  // namespace unity::executor
