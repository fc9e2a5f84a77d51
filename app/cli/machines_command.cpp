// `unity machines [MACHINE] [--nodes N] [--gpus N] [--json]`: the machine presets, or one machine
// (a preset or a machine .json file, cut to the selection) in detail, which also validates a file.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "machine_options.h"
#include "table_printer.h"
#include "unity/core/errors.h"
#include "unity/core/machine/machine_spec.h"

namespace unity::cli {
namespace {

std::string tflops(double flops) { return fmt::format("{:.4g}", flops / 1e12); }
std::string gb_per_s(double bytes_per_s) { return fmt::format("{:.4g} GB/s", bytes_per_s / 1e9); }
std::string micros(double seconds) { return fmt::format("{:.3g} us", seconds * 1e6); }

bool several_islands(const MachineSpec& m) { return m.islands_per_node() > 1; }
std::string fp8(const DeviceSpec& d) {
  return d.peak_flops_fp8 > 0 ? tflops(d.peak_flops_fp8) : "-";
}

std::string islands(const MachineSpec& m) {
  return several_islands(m) ? fmt::format("{} x {}", m.islands_per_node(), m.island_size()) : "1";
}

void print_table(const std::vector<MachineSpec>& machines) {
  // The device name goes last: the table left-aligns only the first and the last column.
  Table table({"machine", "max nodes", "devices/node", "islands", "fp32 TFLOP/s", "fp16 TFLOP/s",
               "fp8 TFLOP/s", "memory", "memory BW", "intra-island", "inter-island", "inter-node",
               "inter-pod", "device"});
  for (const MachineSpec& m : machines) {
    const DeviceSpec& d = m.device(0);
    table.add({m.name, std::to_string(m.max_nodes), std::to_string(m.devices_per_node), islands(m),
               tflops(d.peak_flops_fp32), tflops(d.peak_flops_fp16), fp8(d),
               human_bytes(d.memory_bytes), gb_per_s(d.memory_bandwidth),
               gb_per_s(m.intra_island.bandwidth),
               several_islands(m) ? gb_per_s(m.inter_island.bandwidth) : "-",
               gb_per_s(m.inter_node.bandwidth),
               m.pods() > 1 ? gb_per_s(m.inter_pod.bandwidth) : "-", d.name});
  }
  table.print();
}

void print_detail(const MachineSpec& m) {
  const std::string noun = m.device(0).kind == "cpu" ? "ranks" : "GPUs";
  fmt::print("{}: {}\n", m.name, m.description);
  fmt::print("  nodes         {} of {} ({} {} in use)\n", m.num_nodes, m.max_nodes, m.num_devices(),
             noun);
  if (m.pods() > 1)
    fmt::print("  pods          {} nodes each ({} {}), {} pods in all\n", m.nodes_per_pod,
               m.nodes_per_pod * m.devices_per_node, noun, m.pods());
  fmt::print("  per node      {} {}, {}\n", m.devices_per_node, noun,
             several_islands(m)
                 ? fmt::format("{} islands of {}", m.islands_per_node(), m.island_size())
                 : std::string("one island"));
  for (const DeviceSpec& d : m.device_types)
    fmt::print(
        "  device        {} ({}): {} TFLOP/s fp32, {} TFLOP/s fp16, {} TFLOP/s bf16, {}, {}, {}\n",
        d.name, d.kind, tflops(d.peak_flops_fp32), tflops(d.peak_flops_fp16),
        tflops(d.peak_flops(DataType::BFloat16)),
        d.peak_flops_fp8 > 0 ? tflops(d.peak_flops_fp8) + " TFLOP/s fp8" : "no fp8",
        gb_per_s(d.memory_bandwidth), human_bytes(d.memory_bytes));
  // The discounts the cost model applies to those peaks (docs/cost-model.md).
  for (const DeviceSpec& d : m.device_types)
    fmt::print(
        "  rates         large GEMMs at {:.3f} of peak{}, memory-bound kernels at {:.2f} of "
        "bandwidth\n",
        d.compute_efficiency,
        d.peak_flops_fp8 > 0 ? fmt::format(" ({:.3f} in fp8)", d.fp8_efficiency()) : "",
        d.memory_efficiency);
  auto link = [](const char* what, const LinkSpec& l) {
    fmt::print("  {:<13} {}: {}, {}\n", what, l.name, gb_per_s(l.bandwidth), micros(l.latency));
  };
  link("intra-island", m.intra_island);
  if (several_islands(m)) link("inter-island", m.inter_island);
  link("inter-node", m.inter_node);
  if (m.pods() > 1) link("inter-pod", m.inter_pod);
  if (!m.source.empty()) fmt::print("  source        {}\n", m.source);
}

}  // namespace

void add_machines_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "machines", "List the machine presets, or show (and validate) one machine or machine file");
  auto opts = std::make_shared<MachineOptions>();
  auto json_out = std::make_shared<bool>(false);
  cmd->add_option("machine", opts->machine, "A preset name or a machine .json file to show");
  add_machine_selection_options(cmd, *opts);
  cmd->add_flag("--json", *json_out, "Print JSON (the machine file format) instead of a table");
  cmd->callback([opts, json_out] {
    if (!opts->machine.empty()) {
      const MachineSpec m = resolve_machine(*opts);
      if (*json_out)
        fmt::print("{}\n", machine_to_json(m).dump(2));
      else
        print_detail(m);
      return;
    }
    if (opts->nodes > 0 || opts->gpus > 0)
      throw InputError("--nodes and --gpus need a machine: unity machines MACHINE --gpus N");
    std::vector<MachineSpec> machines;
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& name : machine_preset_names()) {
      machines.push_back(load_machine(name));
      rows.push_back(machine_to_json(machines.back()));
    }
    if (*json_out)
      fmt::print("{}\n", rows.dump(2));
    else
      print_table(machines);
  });
}

}  // namespace unity::cli
