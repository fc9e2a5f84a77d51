#include "machine_options.h"

#include <fmt/format.h>

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

}  // namespace unity::cli
