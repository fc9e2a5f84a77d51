// Machine presets (compiled in from resources/machines/*.json), machine files, and cutting a
// machine down to the sub-cluster the user asked for with --nodes / --gpus.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "embedded_files.h"
#include "unity/core/errors.h"
#include "unity/core/machine/machine_spec.h"

namespace unity {
namespace {

// The order `unity machines` lists them in: the paper's machine first. Other embedded files follow.
constexpr std::string_view kPresetOrder[] = {"summit",      "dgx-a100",  "selene",
                                             "dgx-h100",    "dgx-h200",  "dgx-b200",
                                             "gb200-nvl72", "pcie-4gpu", "cpu-local"};
constexpr int kCpuLocalMaxRanks = 256;
constexpr std::int64_t kFallbackRam = std::int64_t{16} << 30;

const detail::EmbeddedFile* find_preset(const std::string& name) {
  for (const auto& e : detail::embedded_machines())
    if (e.name == name) return &e;
  return nullptr;
}

MachineSpec parse_text(std::string_view text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or a number out of range
    throw InputError(fmt::format("machine file '{}' is not valid JSON: {}", origin, e.what()));
  }
  return machine_from_json(j);
}

std::string noun(const MachineSpec& m) {
  const bool cpu = !m.device_types.empty() && m.device_types[0].kind == "cpu";
  return cpu ? "ranks" : "GPUs";
}

// "summit has 4608 nodes of 6 GPUs"
std::string shape_of(const MachineSpec& m) {
  return fmt::format("{} has {} node{} of {} {}", m.name, m.max_nodes, m.max_nodes == 1 ? "" : "s",
                     m.devices_per_node, noun(m));
}

// N of a node's devices: the island size that keeps islands whole and within the physical ones
// (summit --gpus 4: two islands of 2, one per socket). When N cannot be split evenly over the
// physical islands (summit --gpus 5) the islands shrink further, so links count as the slower
// inter-island class: collectives over all N devices cross it in reality too.
int island_size_for(const MachineSpec& m, int n) {
  const int physical = m.island_size();
  if (n <= physical) return 0;
  for (int s = physical; s >= 1; --s)
    if (n % s == 0 && n / s <= m.islands_per_node()) return s;
  for (int s = physical; s >= 1; --s)
    if (n % s == 0) return s;
  return 1;
}

MachineSpec take_devices_of_one_node(MachineSpec m, int n) {
  const int size = island_size_for(m, n);
  m.num_nodes = 1;
  m.devices_per_node = n;
  m.devices_per_island = size == n ? 0 : size;
  return m;
}

// `elastic_ranks`: cpu-local, whose one node has as many ranks as asked for.
MachineSpec select(const MachineSpec& full, const MachineSelection& sel, bool elastic_ranks) {
  validate_machine(full);
  if (sel.nodes < 0) throw InputError(fmt::format("--nodes {}: must be at least 1", sel.nodes));
  if (sel.devices < 0) throw InputError(fmt::format("--gpus {}: must be at least 1", sel.devices));
  if (sel.nodes > full.max_nodes)
    throw InputError(
        fmt::format("--nodes {}: more nodes than the machine has: {}", sel.nodes, shape_of(full)));
  MachineSpec m = full;
  if (sel.devices == 0) {
    if (sel.nodes > 0) m.num_nodes = sel.nodes;
    validate_machine(m);
    return m;
  }
  const int n = sel.devices;
  if (elastic_ranks) {
    if (n > kCpuLocalMaxRanks)
      throw InputError(
          fmt::format("--gpus {}: {} runs at most {} ranks", n, full.name, kCpuLocalMaxRanks));
    m.num_nodes = 1;
    m.devices_per_node = n;
    m.devices_per_island = 0;
  } else if (n <= full.devices_per_node) {
    m = take_devices_of_one_node(full, n);
  } else {
    const std::int64_t total = static_cast<std::int64_t>(full.max_nodes) * full.devices_per_node;
    if (n > total)
      throw InputError(fmt::format("--gpus {}: more {} than the machine has: {} ({} {})", n,
                                   noun(full), shape_of(full), total, noun(full)));
    // Jobs on racks that are one NVLink domain (GB200 NVL72) take an equal share of each rack:
    // 256 GPUs are 4 racks of 64, as NVIDIA's own runs on them are laid out.
    const int nodes = (n + full.devices_per_node - 1) / full.devices_per_node;
    if (n % nodes != 0)
      throw InputError(fmt::format(
          "--gpus {}: {}; more than one node takes an equal share of the fewest nodes that hold "
          "them, and {} {} do not split evenly over {} nodes: --gpus must be at most {}, a "
          "multiple of {}, or split so",
          n, shape_of(full), n, noun(full), nodes, full.devices_per_node, full.devices_per_node));
    if (n % full.devices_per_node != 0) m = take_devices_of_one_node(full, n / nodes);
    m.num_nodes = nodes;
  }
  if (sel.nodes > 0 && sel.nodes != m.num_nodes)
    throw InputError(fmt::format("--nodes {} and --gpus {} disagree: {}, so --gpus {} is {} node{}",
                                 sel.nodes, n, shape_of(full), n, m.num_nodes,
                                 m.num_nodes == 1 ? "" : "s"));
  validate_machine(m);
  return m;
}

std::int64_t total_ram_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemTotal:" && kib > 0) return kib * 1024;
  return kFallbackRam;
}

}  // namespace

std::vector<std::string> machine_preset_names() {
  std::vector<std::string> names;
  for (auto name : kPresetOrder)
    if (find_preset(std::string(name))) names.emplace_back(name);
  std::vector<std::string> others;
  for (const auto& e : detail::embedded_machines())
    if (std::find(names.begin(), names.end(), e.name) == names.end()) others.emplace_back(e.name);
  std::sort(others.begin(), others.end());
  names.insert(names.end(), others.begin(), others.end());
  return names;
}

MachineSpec select_machine(const MachineSpec& m, const MachineSelection& selection) {
  return select(m, selection, false);
}

MachineSpec load_machine(const std::string& spec, const MachineSelection& selection) {
  if (const auto* preset = find_preset(spec)) {
    const bool cpu_local = spec == "cpu-local";
    MachineSpec m = select(parse_text(preset->text, spec), selection, cpu_local);
    if (cpu_local) {
      // The ranks share this machine's RAM; read it now so a plan fits the machine it runs on.
      const std::int64_t per_rank = total_ram_bytes() / m.num_devices();
      for (DeviceSpec& d : m.device_types) d.memory_bytes = std::max<std::int64_t>(per_rank, 1);
    }
    return m;
  }
  const std::filesystem::path path(spec);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    std::string presets;
    for (const auto& name : machine_preset_names()) presets += (presets.empty() ? "" : ", ") + name;
    // A path names a file the user meant; a bare word, a preset.
    const bool looks_like_file = spec.find('/') != std::string::npos || path.has_extension();
    throw InputError(fmt::format(
        "unknown machine '{}': not a preset ({}) nor a machine .json file{}", spec, presets,
        looks_like_file ? (std::filesystem::exists(path, ec) ? " (it is not a regular file)"
                                                             : " (no such file)")
                        : ""));
  }
  std::ifstream in(path);
  if (!in.is_open()) throw InputError(fmt::format("cannot read machine file '{}'", spec));
  std::stringstream text;
  text << in.rdbuf();
  return select_machine(parse_text(text.str(), spec), selection);
}

}  // namespace unity
