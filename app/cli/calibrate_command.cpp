// `unity calibrate --backend cpu [--ranks N] [--out FILE] [--json]`: measures this machine with N
// ranks running at once (GEMM throughput, memory bandwidth, per-operator overhead, all-reduce
// latency and bandwidth between ranks) and writes a machine file for the cost model: cpu-local
// sized to N ranks with the measured figures. Use it with `unity optimize --machine FILE --gpus N`
// (plans and their predictions) or `unity run PLAN --machine FILE` (the prediction of an existing
// plan).
#include <fmt/format.h>

#include "commands.h"
#include "table_printer.h"
#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/executor/calibration.h"
#include "unity/executor/op_profiles.h"
#include "unity/projects/project.h"
#include "unity/use_cases/calibrate.h"

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
  std::string project;
};

void calibrate_command(const CalibrateOptions& o) {
  if (o.backend != "cpu")
    throw InputError(fmt::format(
        "--backend {}: calibration measures the CPU backend (cpu-local); GPU machines use "
        "their presets' published figures",
        o.backend));
  const Calibration c = use_cases::measure_machine({o.ranks, o.seconds, o.mpirun});
  const MachineSpec m = use_cases::calibrated_machine_of(c);
  const std::string out =
      o.out.empty() ? fmt::format("cpu-local-calibrated-{}.json", c.ranks) : o.out;
  write_text_file_atomic(out, machine_to_json(m).dump(2) + "\n");
  // --project: every later plan for cpu-local at this rank count made with the project uses it.
  std::int64_t machine_id = 0;
  if (!o.project.empty()) {
    auto project = projects::Project::open_or_create(o.project);
    machine_id = use_cases::record_calibration(project, m);
  }
  // Operator profiles start empty: `unity run --machine` measures each operator the first time it
  // predicts a plan with it, and keeps the times here.
  const auto profiles = profiles_path_for(out);
  MeasuredProfiles(c.slowdown()).save(profiles);
  if (o.json) {
    fmt::print("{}\n", nlohmann::json{{"machine_file", out},
                                      {"calibration", calibration_to_json(c)},
                                      {"project", o.project.empty()
                                                      ? nlohmann::json(nullptr)
                                                      : nlohmann::json{{"file", o.project},
                                                                       {"machine_id", machine_id}}}}
                           .dump(2));
    return;
  }
  fmt::print("calibrated cpu-local for {} rank{} -> {}\n", c.ranks, c.ranks == 1 ? "" : "s", out);
  fmt::print("  GEMM          {:8.2f} GFLOP/s per rank\n", c.gemm_flops * 1e-9);
  fmt::print("  memory        {:8.2f} GB/s per rank\n", c.memory_bandwidth * 1e-9);
  fmt::print("  per operator  {:8.2f} us\n", c.launch_latency * 1e6);
  fmt::print("  sigmoid value {:8.2f} ns\n", c.transcendental_seconds * 1e9);
  fmt::print("  GELU value    {:8.2f} ns\n", c.erf_seconds * 1e9);
  fmt::print("  depthwise MAC {:8.2f} ns\n", c.depthwise_mac_seconds * 1e9);
  for (const auto& [name, curve] : c.update_rates) {
    std::string points;
    for (const auto& [parameters, seconds] : curve)
      points += fmt::format("{}{:.2f} ns a parameter on {}", points.empty() ? "" : ", ",
                            seconds * 1e9, human_count(static_cast<std::int64_t>(parameters)));
    fmt::print("  {:<13} step {}\n", name, points);
  }
  if (c.links_measured) {
    fmt::print("  link          {:8.2f} GB/s, {:.2f} us (from all-reduces over every rank)\n",
               c.link_bandwidth * 1e-9, c.link_latency * 1e6);
  }
  fmt::print("  slowdown      {:8.2f} x (one rank's speed alone / with every rank computing)\n",
             c.slowdown());
  fmt::print("profiles -> {} (operators are measured when a prediction first needs them)\n",
             profiles.string());
  if (!o.project.empty())
    fmt::print(
        "project {}: machine {} recorded; plans for cpu-local on {} rank{} made with the "
        "project use it\n",
        o.project, m.name, c.ranks, c.ranks == 1 ? "" : "s");
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
  cmd->add_option("--project", o->project,
                  "Also record the calibrated machine in this project (.unity; created when "
                  "missing): plans for cpu-local made with the project use it");
  cmd->callback([o] { calibrate_command(*o); });
}

}  // namespace unity::cli
