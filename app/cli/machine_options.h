#pragma once
// The machine flags every planning command shares: --machine P [--nodes N | --gpus N].
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/plan/plan.h"
#include "unity/projects/project.h"

namespace unity::cli {

struct MachineOptions {
  std::string machine;  // a preset name or a machine .json file
  int nodes = 0;        // 0: not given
  int gpus = 0;         // 0: not given
};

// --machine (required), --nodes, --gpus (alias --devices). `o` must outlive the parse.
void add_machine_options(CLI::App* cmd, MachineOptions& o);
// Only --nodes and --gpus/--devices, for commands that take the machine another way.
void add_machine_selection_options(CLI::App* cmd, MachineOptions& o);
// load_machine with the selection; throws InputError naming the flag or the machine file's field.
MachineSpec resolve_machine(const MachineOptions& o);
// The same with a project open: its calibrated cpu-local for the rank count where it holds one
// (`unity calibrate --project`), and a note on stderr that says so.
MachineSpec project_machine(const std::optional<projects::Project>& project,
                            const MachineOptions& o);
// "  costs          12 operators measured, 3 analytic" and, for cpu-local, which figures it was
// costed with (probed on this machine at DATE, nominal, or calibrated).
void print_cost_sources(const PlanSummary& s, const MachineSpec& machine);

}  // namespace unity::cli
