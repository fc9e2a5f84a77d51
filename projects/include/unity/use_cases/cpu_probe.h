#pragma once
// cpu-local is the computer Unity runs on, so its plans are costed with this computer's figures:
// the first plan for cpu-local on N ranks runs a quick probe (`unity calibrate`'s measurements,
// executor::CalibrationOptions::quick: GEMMs, streaming memory, the executor's cost per operator
// and, with two ranks or more, all-reduces, every rank at once) and keeps the figures in the cache
// folder, keyed by this computer (host name, CPU model, cores) and the ranks measured. Later plans
// read them. `unity calibrate --project` still refines them for plans made with that project.
//
// UNITY_CPU_LOCAL=nominal keeps cpu-local's shipped nominal figures (tests, and anything else whose
// numbers must not depend on the computer it runs on).
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "unity/core/machine/machine_spec.h"
#include "unity/executor/calibration.h"

namespace unity::use_cases {

// What identifies this computer to the cache.
struct ThisCpu {
  std::string host;   // gethostname
  std::string model;  // /proc/cpuinfo's first "model name" ("unknown" where there is none)
  int cores = 1;      // the cores this process may use
};
ThisCpu this_cpu();

// The ranks a probe for `ranks` measures at once: more ranks than cores share the cores, so a
// probe measures as many ranks as there are cores and probed_cpu_local shares the rest.
int probed_ranks(int ranks, const ThisCpu& cpu);

struct CpuProbe {
  ThisCpu cpu;
  int ranks = 1;     // ranks measured at once
  std::string date;  // when, UTC: "2026-05-02 10:11 UTC"
  executor::Calibration calibration;
  double seconds = 0;          // how long the measurement took
  std::filesystem::path file;  // where it is kept (empty: nowhere to keep it)
  bool from_cache = false;     // read, not measured now
};

nlohmann::json cpu_probe_to_json(const CpuProbe& probe);
CpuProbe cpu_probe_from_json(const nlohmann::json& j);  // throws InputError naming the field

// The cache folder: $XDG_CACHE_HOME/unity, else $HOME/.cache/unity; empty when neither is set.
std::filesystem::path cpu_probe_cache_dir();
// The file kept for `ranks` ranks measured at once on `cpu` (in cpu_probe_cache_dir()).
std::filesystem::path cpu_probe_file(const ThisCpu& cpu, int ranks);

// The probe of this computer for cpu-local on `ranks` ranks: the kept one when the cache holds one
// for this computer and probed_ranks(ranks), else measured now (about a second; one process at a
// time, the others wait and read its result) and kept, written atomically. Throws RunError when
// the measurement fails (no mpirun, a rank that died).
CpuProbe cpu_probe(int ranks);

// cpu-local with `selection` and the probe's figures, its source saying "measured on this machine
// DATE". With more ranks than the probe measured (than cores), each rank gets probe.ranks / ranks
// of the measured compute, memory bandwidth and link bandwidth, and its times per operator and per
// transcendental value grow by as much.
MachineSpec probed_cpu_local(const CpuProbe& probe, const MachineSelection& selection);

// UNITY_CPU_LOCAL: "nominal" keeps the shipped figures; unset, empty or "probe": this computer's.
// Anything else is an InputError naming the variable.
bool cpu_local_nominal_requested();

// Which figures a cpu-local plan is costed with.
enum class CpuFigures {
  Nominal,     // cpu-local as shipped (UNITY_CPU_LOCAL=nominal, or a probe that failed)
  Probed,      // measured on this machine by the probe
  Calibrated,  // `unity calibrate`'s (a project's, or a machine file it wrote)
};
// nullopt: not a cpu-local machine.
std::optional<CpuFigures> cpu_figures_of(const MachineSpec& machine);
// One line saying which figures `machine` carries, for the CLI and the explorer: "measured on this
// machine 2026-05-02 10:11 UTC by a quick probe (...)", "nominal ...", "calibrated ..."; empty
// for machines other than cpu-local.
std::string describe_cpu_figures(const MachineSpec& machine);

// The source of cpu-local with its nominal figures because the probe failed (`why`).
std::string failed_probe_source(const std::string& why);

}  // namespace unity::use_cases
