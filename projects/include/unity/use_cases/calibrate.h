#pragma once
// Calibrate: measure this machine's CPU ranks (GEMM, memory, per-operator overhead, links) for the
// cost model, for `unity calibrate` (which writes a machine file and, with --project, records the
// machine in the project) and for every plan made with that project: `machine_for` gives the
// project's calibrated cpu-local where one was recorded for the same rank count.
#include <optional>
#include <string>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/plan/plan.h"
#include "unity/executor/calibration.h"
#include "unity/projects/project.h"

namespace unity::use_cases {

struct CalibrateRequest {
  int ranks = 1;          // ranks measured at once (the rank count plans will use)
  double seconds = 0.25;  // per measurement
  std::string mpirun;     // more than one rank: the mpirun to use (empty: $UNITY_MPIRUN or PATH)
  bool quick = false;     // executor::CalibrationOptions::quick (the probe of cpu_probe.h)
};

// Measures (one rank in this process, more through mpirun); throws RunError when a run fails.
executor::Calibration measure_machine(const CalibrateRequest& request);

// The machine the calibration describes, named "cpu-local-calibrated-N", with a source that says
// what was measured.
MachineSpec calibrated_machine_of(const executor::Calibration& calibration);

// Records the calibrated machine in the project. Returns its machine id.
std::int64_t record_calibration(projects::Project& project, const MachineSpec& calibrated);

// The machine a plan for `spec` with `selection` is made and costed on: with a project that holds
// a calibrated cpu-local for the same number of ranks, that one (the latest recorded); else for
// cpu-local this computer's probed figures (cpu_probe.h; the nominal ones with
// UNITY_CPU_LOCAL=nominal); else load_machine(spec, selection). `calibrated` (if given) says
// whether it was the project's. describe_cpu_figures says which figures a cpu-local carries.
MachineSpec machine_for(const projects::Project* project, const std::string& spec,
                        const MachineSelection& selection, bool* calibrated = nullptr);

// A plan's mapping costed on this computer's CPU ranks (one per device): on the project's
// calibrated cpu-local and with its measured operator times where it has them, else on cpu-local
// with this computer's probed figures (or the nominal ones, machine_for). 0 for a pipelined plan
// (its own timeline is what a run is compared with).
struct CpuPrediction {
  double ms = 0;
  bool calibrated = false;   // the project's measured machine
  std::size_t profiles = 0;  // measured operator times the project holds
  std::string figures;       // describe_cpu_figures of the machine it was costed on
};
CpuPrediction predict_on_this_cpu(const Plan& plan, const projects::Project* project);

}  // namespace unity::use_cases
