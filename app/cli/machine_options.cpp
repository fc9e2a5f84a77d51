#include "machine_options.h"

#include <fmt/format.h>

#include "unity/use_cases/calibrate.h"
#include "unity/use_cases/cpu_probe.h"

namespace unity::cli {

void add_machine_selection_options(CLI::App* cmd, MachineOptions& o) {
  cmd->add_option("--nodes", o.nodes, "Use N whole nodes of the machine (default: 1)")
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--gpus,--devices", o.gpus,
                  "Use N devices: within one node when N fits, else N / devices-per-node whole "
                  "nodes (CPU ranks on cpu-local)")
      ->check(CLI::Range(1, 1 << 30));
}

void add_machine_options(CLI::App* cmd, MachineOptions& o) {
  std::string presets;
  for (const auto& name : machine_preset_names()) presets += (presets.empty() ? "" : ", ") + name;
  cmd->add_option("--machine", o.machine,
                  fmt::format("Machine: a preset ({}) or a machine .json file", presets))
      ->required();
  add_machine_selection_options(cmd, o);
}

MachineSpec resolve_machine(const MachineOptions& o) {
  return load_machine(o.machine, MachineSelection{o.nodes, o.gpus});
}

MachineSpec project_machine(const std::optional<projects::Project>& project,
                            const MachineOptions& o) {
  bool calibrated = false;
  MachineSpec m = use_cases::machine_for(project ? &*project : nullptr, o.machine,
                                         MachineSelection{o.nodes, o.gpus}, &calibrated);
  if (calibrated)
    fmt::print(stderr, "note: {} from {}: {}\n", m.name, project->file().string(), m.source);
  return m;
}

void print_cost_sources(const PlanSummary& s, const MachineSpec& machine) {
  if (s.measured_operators == 0)
    fmt::print("  costs          analytic (no operator of the plan has a measured time)\n");
  else
    fmt::print("  costs          {} operator{} measured, {} analytic\n", s.measured_operators,
               s.measured_operators == 1 ? "" : "s", s.analytic_operators);
  // Which figures cpu-local was costed with: this computer's probed ones, the nominal ones, or
  // `unity calibrate`'s.
  const std::string figures = use_cases::describe_cpu_figures(machine);
  if (!figures.empty())
    fmt::print("  figures        {}{}\n", figures,
               use_cases::cpu_figures_of(machine) == use_cases::CpuFigures::Calibrated
                   ? std::string()
                   : fmt::format("; `unity calibrate --ranks {} --project P` measures more",
                                 machine.num_devices()));
}

}  // namespace unity::cli
