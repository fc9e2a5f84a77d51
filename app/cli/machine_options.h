#pragma once
// The machine flags every planning command shares: --machine P [--nodes N | --gpus N].
#include <string>

#include <CLI/CLI.hpp>

#include "unity/core/machine_spec.h"

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

}  // namespace unity::cli
