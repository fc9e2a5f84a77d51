#include "unity/use_cases/calibrate.h"

#include <algorithm>

#include <fmt/format.h>

#include "unity/executor/backends.h"
#include "unity/executor/launcher.h"
#include "unity/executor/op_profiles.h"
#include "unity/projects/op_profiles.h"
#include "unity/use_cases/cpu_probe.h"

namespace unity::use_cases {
namespace {

std::string calibrated_name(int ranks) { return fmt::format("cpu-local-calibrated-{}", ranks); }

}  // namespace

executor::Calibration measure_machine(const CalibrateRequest& r) {
  if (r.ranks == 1) {
    auto backend = executor::make_cpu_backend(1);
    auto comm = executor::make_local_communicator();
    executor::CalibrationOptions co;
    co.seconds = r.seconds;
    co.quick = r.quick;
    return executor::calibrate(*backend, *comm, co);
  }
  executor::LaunchOptions l;
  l.ranks = r.ranks;
  l.calibrate = true;
  l.calibration_seconds = r.seconds;
  l.calibration_quick = r.quick;
  l.mpirun = r.mpirun;
  return executor::calibration_from_json(executor::launch_run(l).result.at("calibration"));
}

MachineSpec calibrated_machine_of(const executor::Calibration& c) {
  MachineSpec m = executor::calibrated_machine(c);
  m.source = fmt::format(
      "unity calibrate with {} rank{} running at once: GEMM {:.1f} GFLOP/s per rank, streaming "
      "{:.2f} GB/s per rank, {:.2f} us per operator{}",
      c.ranks, c.ranks == 1 ? "" : "s", c.gemm_flops * 1e-9, c.memory_bandwidth * 1e-9,
      c.launch_latency * 1e6,
      c.links_measured ? fmt::format(", all-reduce link {:.2f} GB/s and {:.2f} us",
                                     c.link_bandwidth * 1e-9, c.link_latency * 1e6)
                       : std::string(", links not measured (one rank): the preset's"));
  return m;
}

std::int64_t record_calibration(projects::Project& project, const MachineSpec& calibrated) {
  return project.add_machine(calibrated);
}

MachineSpec machine_for(const projects::Project* project, const std::string& spec,
                        const MachineSelection& selection, bool* calibrated) {
  MachineSpec machine = load_machine(spec, selection);
  if (calibrated) *calibrated = false;
  if (spec != "cpu-local") return machine;
  if (project) {
    const std::string name = calibrated_name(machine.num_devices());
    const auto machines = project->machines();
    for (auto it = machines.rbegin(); it != machines.rend(); ++it)
      if (it->name == name && it->devices == machine.num_devices()) {
        if (calibrated) *calibrated = true;
        return project->load_machine(it->id);
      }
  }
  // This computer's figures, measured once and kept (cpu_probe.h), unless nominal ones are asked
  // for. A probe that cannot run (no mpirun for two ranks) leaves the nominal figures, saying why.
  if (cpu_local_nominal_requested()) return machine;
  try {
    return probed_cpu_local(cpu_probe(machine.num_devices()), selection);
  } catch (const std::exception& e) {
    machine.source = failed_probe_source(e.what());
    return machine;
  }
}

CpuPrediction predict_on_this_cpu(const Plan& plan, const projects::Project* project) {
  CpuPrediction out;
  if (plan.pipeline) return out;
  const MachineSpec cpu =
      machine_for(project, "cpu-local", {0, std::max(1, plan.summary.devices)}, &out.calibrated);
  std::shared_ptr<const projects::ProjectProfileSource> profiles;
  if (project) {
    profiles = projects::ProjectProfileSource::load(*project);
    out.profiles = profiles->size();
    if (profiles->empty()) profiles = nullptr;
  }
  out.ms = executor::predicted_iteration_ms(plan.pcg, plan.mapping.views, cpu,
                                            plan.summary.optimizer, profiles);
  out.figures = describe_cpu_figures(cpu);
  return out;
}

}  // namespace unity::use_cases
