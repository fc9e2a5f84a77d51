// `unity calibrate --backend cpu [--ranks N] [--out FILE] [--json]`: measures this machine with N
// ranks running at once (GEMM throughput, memory bandwidth, per-operator overhead, all-reduce
// latency and bandwidth between ranks) and writes a machine file for the cost model: cpu-local
// sized to N ranks with the measured figures. Use it with `unity optimize --machine FILE --gpus N`
// (plans and their predictions) or `unity run PLAN --machine FILE` (the prediction of an existing
// plan).
#include <fmt/format.h>

#include "commands.h"
#include "unity/core/json_io.h"
#include "unity/executor/backends.h"
#include "unity/executor/calibration.h"
#include "unity/executor/launcher.h"
#include "unity/executor/op_profiles.h"

namespace unity::cli {
namespace {

using namespace unity::executor;

struct CalibrateOptions {
  std::string backend = "cpu";
  int ranks = 1;
  std::string out;
  bool json = false;
  double seconds = 0.25;
  std::string mpirun;
};

void calibrate_command(const CalibrateOptions& o) {
  if (o.backend != "cpu")
    throw InputError(fmt::format(
        "--backend {}: calibration measures the CPU backend (cpu-local); GPU machines use "
        "their presets' published figures",
        o.backend));
  Calibration c;
  if (o.ranks == 1) {
    auto backend = make_cpu_backend(1);
    auto comm = make_local_communicator();
    CalibrationOptions co;
    co.seconds = o.seconds;
    c = calibrate(*backend, *comm, co);
  } else {
    LaunchOptions l;
    l.ranks = o.ranks;
    l.calibrate = true;
    l.calibration_seconds = o.seconds;
    l.mpirun = o.mpirun;
    c = calibration_from_json(launch_run(l).result.at("calibration"));
  }
  MachineSpec m = calibrated_machine(c);
  m.source = fmt::format(
      "unity calibrate with {} rank{} running at once: GEMM {:.1f} GFLOP/s per rank, streaming "
      "{:.2f} GB/s per rank, "
      "{:.2f} us per operator{}",
      c.ranks, c.ranks == 1 ? "" : "s", c.gemm_flops * 1e-9, c.memory_bandwidth * 1e-9,
      c.launch_latency * 1e6,
      c.links_measured ? fmt::format(", all-reduce link {:.2f} GB/s and {:.2f} us",
                                     c.link_bandwidth * 1e-9, c.link_latency * 1e6)
                       : std::string(", links not measured (one rank): the preset's"));
  const std::string out =
      o.out.empty() ? fmt::format("cpu-local-calibrated-{}.json", c.ranks) : o.out;
  write_text_file_atomic(out, machine_to_json(m).dump(2) + "\n");
  // Operator profiles start empty: `unity run --machine` measures each operator the first time it
  // predicts a plan with it, and keeps the times here.
  const auto profiles = profiles_path_for(out);
  MeasuredProfiles(c.slowdown()).save(profiles);
  if (o.json) {
    fmt::print(
        "{}\n",
        nlohmann::json{{"machine_file", out}, {"calibration", calibration_to_json(c)}}.dump(2));
    return;
  }
  fmt::print("calibrated cpu-local for {} rank{} -> {}\n", c.ranks, c.ranks == 1 ? "" : "s", out);
  fmt::print("  GEMM          {:8.2f} GFLOP/s per rank\n", c.gemm_flops * 1e-9);
  fmt::print("  memory        {:8.2f} GB/s per rank\n", c.memory_bandwidth * 1e-9);
  fmt::print("  per operator  {:8.2f} us\n", c.launch_latency * 1e6);
  if (c.links_measured) {
    fmt::print("  link          {:8.2f} GB/s, {:.2f} us (from all-reduces over every rank)\n",
               c.link_bandwidth * 1e-9, c.link_latency * 1e6);
  }
  fmt::print("  slowdown      {:8.2f} x (one rank's speed alone / with every rank computing)\n",
             c.slowdown());
  fmt::print("profiles -> {} (operators are measured when a prediction first needs them)\n",
             profiles.string());
  fmt::print("use: unity optimize MODEL --machine {} --gpus {} ...; unity run PLAN --machine {}\n",
             out, c.ranks, out);
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* cmd = app.add_subcommand(
      "calibrate", "Measure this machine for the cost model (a cpu-local machine file)");
  cmd->add_option("--backend", o->backend, "The backend to measure")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--ranks", o->ranks, "Ranks measured at once (the rank count the plans will use)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--out", o->out, "Machine file to write (default: cpu-local-calibrated-N.json)");
  cmd->add_option("--seconds", o->seconds, "Seconds per measurement")
      ->check(CLI::Range(0.01, 60.0))
      ->capture_default_str();
  cmd->add_option("--mpirun", o->mpirun,
                  "The mpirun to use (default: $UNITY_MPIRUN, else mpirun on PATH)");
  cmd->add_flag("--json", o->json, "Print the measurements as JSON");
  cmd->callback([o] { calibrate_command(*o); });
}

}  // namespace unity::cli
