// The machine file format (docs/machines.md): parsing with messages that name the field, and the
// checks every machine must pass however it was made.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string_view>

#include <fmt/format.h>

#include "unity/core/cost/cost_model.h"
#include "unity/core/errors.h"
#include "unity/core/machine/machine_spec.h"

namespace unity {
namespace {

using nlohmann::json;

// Comments a file may carry on any object; kept out of the struct (the top-level "source"
// excepted).
constexpr std::string_view kCommentKeys[] = {"source", "note", "comment"};

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

class Parser {
 public:
  explicit Parser(std::string machine) : machine_(std::move(machine)) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw InputError(fmt::format("machine '{}': {}", machine_, message));
  }

  // A measured curve: an array of [x, y] points, both positive, sorted by x.
  std::vector<std::pair<double, double>> curve(const json& points, const std::string& field,
                                               std::string_view point) const {
    if (!points.is_array()) fail(fmt::format("{} must be an array of [{}]", field, point));
    std::vector<std::pair<double, double>> out;
    for (const auto& p : points) {
      if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number() ||
          p[0].get<double>() <= 0 || p[1].get<double>() <= 0)
        fail(fmt::format("{}: each point is [{}], both positive, got {}", field, point, p.dump()));
      out.push_back({p[0].get<double>(), p[1].get<double>()});
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // Rejects a non-object and unknown keys: a misspelt optional field would otherwise be ignored
  // without a word and its default used.
  void check_object(const json& j, const std::string& path,
                    std::initializer_list<std::string_view> known) const {
    if (!j.is_object())
      fail(fmt::format("{} must be a JSON object, got {}", path.empty() ? "the file" : path,
                       j.dump()));
    for (const auto& [key, value] : j.items()) {
      bool ok = false;
      for (auto k : known) ok = ok || k == key;
      for (auto k : kCommentKeys) ok = ok || k == key;
      if (!ok) fail(fmt::format("unknown field '{}'", join(path, key)));
    }
  }

  const json* find(const json& j, const std::string& path, std::string_view key,
                   bool required) const {
    auto it = j.find(std::string(key));
    if (it != j.end()) return &*it;
    if (required) fail(fmt::format("missing field '{}'", join(path, key)));
    return nullptr;
  }

  std::string text(const json& j, const std::string& path, std::string_view key, bool required,
                   std::string fallback = {}) const {
    const json* v = find(j, path, key, required);
    if (!v) return fallback;
    if (!v->is_string())
      fail(fmt::format("{} must be a string, got {}", join(path, key), v->dump()));
    return v->get<std::string>();
  }

  bool boolean(const json& j, const std::string& path, std::string_view key, bool fallback) const {
    const json* v = find(j, path, key, false);
    if (!v) return fallback;
    if (!v->is_boolean())
      fail(fmt::format("{} must be true or false, got {}", join(path, key), v->dump()));
    return v->get<bool>();
  }

  double number(const json& j, const std::string& path, std::string_view key, bool required,
                double fallback = 0) const {
    const json* v = find(j, path, key, required);
    if (!v) return fallback;
    if (!v->is_number())
      fail(fmt::format("{} must be a number, got {}", join(path, key), v->dump()));
    return v->get<double>();
  }

  // Integers may be written 17179869184 or 16e9-style as long as the value is whole.
  std::int64_t integer(const json& v, const std::string& field) const {
    if (v.is_number_integer()) return v.get<std::int64_t>();
    const double x = v.is_number() ? v.get<double>() : 0.5;
    if (!v.is_number() || std::trunc(x) != x || std::abs(x) > 9e18)
      fail(fmt::format("{} must be a whole number, got {}", field, v.dump()));
    return static_cast<std::int64_t>(x);
  }

  std::int64_t integer(const json& j, const std::string& path, std::string_view key, bool required,
                       std::int64_t fallback = 0) const {
    const json* v = find(j, path, key, required);
    return v ? integer(*v, join(path, key)) : fallback;
  }

  int small_integer(const json& v, const std::string& field) const {
    const std::int64_t x = integer(v, field);
    if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
      fail(fmt::format("{} is out of range, got {}", field, x));
    return static_cast<int>(x);
  }

  int small_integer(const json& j, const std::string& path, std::string_view key, bool required,
                    int fallback = 0) const {
    const json* v = find(j, path, key, required);
    return v ? small_integer(*v, join(path, key)) : fallback;
  }

  DeviceSpec device(const json& j, const std::string& path) const {
    check_object(j, path,
                 {"name",
                  "kind",
                  "peak_flops_fp32",
                  "peak_flops_fp16",
                  "peak_flops_bf16",
                  "peak_flops_fp8",
                  "memory_bandwidth",
                  "memory_bytes",
                  "compute_efficiency",
                  "fp8_compute_efficiency",
                  "memory_efficiency",
                  "launch_latency",
                  "sm_count",
                  "fused_attention",
                  "fused_attention_forward_efficiency",
                  "fused_attention_backward_efficiency",
                  "fused_elementwise",
                  "skips_data_gradients",
                  "lowers_convolutions_through_memory",
                  "transcendental_seconds",
                  "erf_seconds",
                  "depthwise_mac_seconds",
                  "gemm_rates",
                  "update_rates"});
    DeviceSpec d;
    d.name = text(j, path, "name", true);
    d.kind = text(j, path, "kind", false, d.kind);
    d.peak_flops_fp32 = number(j, path, "peak_flops_fp32", true);
    d.peak_flops_fp16 = number(j, path, "peak_flops_fp16", true);
    d.peak_flops_bf16 = number(j, path, "peak_flops_bf16", false, 0.0);
    d.peak_flops_fp8 = number(j, path, "peak_flops_fp8", false, 0.0);
    d.memory_bandwidth = number(j, path, "memory_bandwidth", true);
    d.memory_bytes = integer(j, path, "memory_bytes", true);
    d.compute_efficiency = number(j, path, "compute_efficiency", false, d.compute_efficiency);
    d.fp8_compute_efficiency = number(j, path, "fp8_compute_efficiency", false, 0.0);
    d.memory_efficiency = number(j, path, "memory_efficiency", false, d.memory_efficiency);
    d.launch_latency = number(j, path, "launch_latency", false, d.launch_latency);
    d.sm_count = small_integer(j, path, "sm_count", false, 0);
    d.fused_attention = boolean(j, path, "fused_attention", false);
    d.fused_attention_forward_efficiency =
        number(j, path, "fused_attention_forward_efficiency", false, 0.0);
    d.fused_attention_backward_efficiency =
        number(j, path, "fused_attention_backward_efficiency", false, 0.0);
    d.fused_elementwise = boolean(j, path, "fused_elementwise", false);
    d.skips_data_gradients = boolean(j, path, "skips_data_gradients", false);
    d.lowers_convolutions_through_memory =
        boolean(j, path, "lowers_convolutions_through_memory", false);
    d.transcendental_seconds = number(j, path, "transcendental_seconds", false, 0.0);
    d.erf_seconds = number(j, path, "erf_seconds", false, 0.0);
    d.depthwise_mac_seconds = number(j, path, "depthwise_mac_seconds", false, 0.0);
    if (const json* rates = find(j, path, "gemm_rates", false))
      d.gemm_rates = curve(*rates, join(path, "gemm_rates"), "FLOPs of a product, FLOP/s");
    if (const json* rates = find(j, path, "update_rates", false)) {
      const std::string field = join(path, "update_rates");
      if (!rates->is_object())
        fail(fmt::format("{} must be an object: optimizer -> [[parameters, seconds], ...]", field));
      for (const auto& [name, points] : rates->items()) {
        try {
          optimizer_from_string(name);
        } catch (const InputError& e) {
          fail(fmt::format("{}: {}", field, e.what()));
        }
        d.update_rates[name] =
            curve(points, field + "." + name, "parameters updated, seconds a parameter");
      }
    }
    return d;
  }

  LinkSpec link(const json& j, const std::string& path) const {
    check_object(j, path, {"name", "bandwidth", "latency"});
    return {text(j, path, "name", true), number(j, path, "bandwidth", true),
            number(j, path, "latency", true)};
  }

 private:
  std::string machine_;
};

// Validation messages: "machine 'x': inter_node.bandwidth must be positive, got -5".
class Checker {
 public:
  explicit Checker(const MachineSpec& m) : name_(m.name.empty() ? "<unnamed>" : m.name) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw InputError(fmt::format("machine '{}': {}", name_, message));
  }
  void positive(const std::string& field, double v) const {
    if (!(v > 0) || !std::isfinite(v)) fail(fmt::format("{} must be positive, got {}", field, v));
  }
  void non_negative(const std::string& field, double v) const {
    if (!(v >= 0) || !std::isfinite(v))
      fail(fmt::format("{} must not be negative, got {}", field, v));
  }
  void fraction(const std::string& field, double v) const {
    if (!(v > 0 && v <= 1)) fail(fmt::format("{} must be in (0, 1], got {}", field, v));
  }
  void link(const std::string& field, const LinkSpec& l) const {
    if (l.name.empty()) fail(field + ".name must not be empty");
    positive(field + ".bandwidth", l.bandwidth);
    non_negative(field + ".latency", l.latency);
  }

 private:
  std::string name_;
};

json link_to_json(const LinkSpec& l) {
  return {{"name", l.name}, {"bandwidth", l.bandwidth}, {"latency", l.latency}};
}

}  // namespace

void validate_machine(const MachineSpec& m) {
  const Checker c(m);
  if (m.name.empty()) c.fail("name must not be empty");
  if (m.max_nodes < 1) c.fail(fmt::format("max_nodes must be positive, got {}", m.max_nodes));
  if (m.num_nodes < 1) c.fail(fmt::format("num_nodes must be positive, got {}", m.num_nodes));
  if (m.num_nodes > m.max_nodes)
    c.fail(fmt::format("num_nodes {} is more nodes than the machine has (max_nodes {})",
                       m.num_nodes, m.max_nodes));
  if (m.devices_per_node < 1)
    c.fail(fmt::format("devices_per_node must be positive, got {}", m.devices_per_node));
  // Device indices are ints; a cluster that overflows them is a typo, not a machine.
  if (static_cast<std::int64_t>(m.max_nodes) * m.devices_per_node > (1 << 30))
    c.fail(fmt::format("max_nodes {} x devices_per_node {} is more devices than Unity can index",
                       m.max_nodes, m.devices_per_node));
  if (m.devices_per_island < 0)
    c.fail(fmt::format("devices_per_island must not be negative, got {}", m.devices_per_island));
  if (m.devices_per_island > 0 && m.devices_per_node % m.devices_per_island != 0)
    c.fail(fmt::format("devices_per_island {} must divide devices_per_node {}",
                       m.devices_per_island, m.devices_per_node));
  if (m.nodes_per_pod < 0)
    c.fail(fmt::format("nodes_per_pod must not be negative, got {}", m.nodes_per_pod));
  if (m.nodes_per_pod > 0 && m.max_nodes % m.nodes_per_pod != 0)
    c.fail(fmt::format("nodes_per_pod {} must divide max_nodes {}", m.nodes_per_pod, m.max_nodes));
  if (m.device_types.empty()) c.fail("device_types must list at least one device");
  for (std::size_t i = 0; i < m.device_types.size(); ++i) {
    const DeviceSpec& d = m.device_types[i];
    const std::string f = fmt::format("device_types[{}]", i);
    if (d.name.empty()) c.fail(f + ".name must not be empty");
    if (d.kind != "gpu" && d.kind != "cpu")
      c.fail(fmt::format("{}.kind must be \"gpu\" or \"cpu\", got \"{}\"", f, d.kind));
    c.positive(f + ".peak_flops_fp32", d.peak_flops_fp32);
    c.positive(f + ".peak_flops_fp16", d.peak_flops_fp16);
    c.non_negative(f + ".peak_flops_bf16", d.peak_flops_bf16);
    c.non_negative(f + ".peak_flops_fp8", d.peak_flops_fp8);
    c.positive(f + ".memory_bandwidth", d.memory_bandwidth);
    if (d.memory_bytes <= 0)
      c.fail(fmt::format("{}.memory_bytes must be positive, got {}", f, d.memory_bytes));
    c.fraction(f + ".compute_efficiency", d.compute_efficiency);
    if (d.fp8_compute_efficiency != 0)
      c.fraction(f + ".fp8_compute_efficiency", d.fp8_compute_efficiency);
    c.fraction(f + ".memory_efficiency", d.memory_efficiency);
    c.non_negative(f + ".launch_latency", d.launch_latency);
    c.non_negative(f + ".transcendental_seconds", d.transcendental_seconds);
    c.non_negative(f + ".erf_seconds", d.erf_seconds);
    c.non_negative(f + ".depthwise_mac_seconds", d.depthwise_mac_seconds);
    if (d.sm_count < 0)
      c.fail(fmt::format("{}.sm_count must not be negative, got {}", f, d.sm_count));
    for (const auto& [name, value] :
         {std::pair{"fused_attention_forward_efficiency", d.fused_attention_forward_efficiency},
          std::pair{"fused_attention_backward_efficiency", d.fused_attention_backward_efficiency}})
      if (!(value >= 0 && value <= 1))
        c.fail(fmt::format("{}.{} must be between 0 and 1 (0: a GEMM's rate), got {}", f, name,
                           value));
  }
  // Per node of the whole cluster, so that any sub-cluster keeps its nodes' types.
  if (!m.node_device_type.empty() &&
      m.node_device_type.size() != static_cast<std::size_t>(m.max_nodes))
    c.fail(fmt::format("node_device_type must have one entry per node (max_nodes {}), got {}",
                       m.max_nodes, m.node_device_type.size()));
  for (std::size_t i = 0; i < m.node_device_type.size(); ++i) {
    const int t = m.node_device_type[i];
    if (t < 0 || static_cast<std::size_t>(t) >= m.device_types.size())
      c.fail(fmt::format("node_device_type[{}] is {}, not an index into device_types (0..{})", i, t,
                         m.device_types.size() - 1));
  }
  c.link("intra_island", m.intra_island);
  c.link("inter_island", m.inter_island);
  c.link("inter_node", m.inter_node);
  if (m.pods() > 1) c.link("inter_pod", m.inter_pod);
}

MachineSpec machine_from_json(const json& j) {
  // The name first, so every later message can say which machine it is about.
  std::string name = "<unnamed>";
  if (j.is_object() && j.contains("name") && j["name"].is_string())
    name = j["name"].get<std::string>();
  const Parser p(name);
  p.check_object(j, "",
                 {"name", "description", "num_nodes", "max_nodes", "devices_per_node",
                  "devices_per_island", "nodes_per_pod", "device_types", "node_device_type",
                  "intra_island", "inter_island", "inter_node", "inter_pod"});
  MachineSpec m;
  m.name = p.text(j, "", "name", true);
  m.description = p.text(j, "", "description", false);
  m.source = p.text(j, "", "source", false);
  m.max_nodes = p.small_integer(j, "", "max_nodes", true);
  m.num_nodes = p.small_integer(j, "", "num_nodes", false, 1);
  m.devices_per_node = p.small_integer(j, "", "devices_per_node", true);
  m.devices_per_island = p.small_integer(j, "", "devices_per_island", false, 0);
  m.nodes_per_pod = p.small_integer(j, "", "nodes_per_pod", false, 0);

  const json* types = p.find(j, "", "device_types", true);
  if (!types->is_array() || types->empty())
    p.fail("device_types must be a non-empty list of devices, got " + types->dump());
  for (std::size_t i = 0; i < types->size(); ++i)
    m.device_types.push_back(p.device((*types)[i], fmt::format("device_types[{}]", i)));

  if (const json* per_node = p.find(j, "", "node_device_type", false)) {
    if (!per_node->is_array()) p.fail("node_device_type must be a list of device_types indices");
    for (std::size_t i = 0; i < per_node->size(); ++i)
      m.node_device_type.push_back(
          p.small_integer((*per_node)[i], fmt::format("node_device_type[{}]", i)));
  }

  m.intra_island = p.link(*p.find(j, "", "intra_island", true), "intra_island");
  // Only a node split into several islands uses the inter-island link; otherwise it may be left
  // out.
  const bool several_islands =
      m.devices_per_island > 0 && m.devices_per_island < m.devices_per_node;
  if (const json* inter = p.find(j, "", "inter_island", several_islands))
    m.inter_island = p.link(*inter, "inter_island");
  else
    m.inter_island = m.intra_island;
  m.inter_node = p.link(*p.find(j, "", "inter_node", true), "inter_node");
  // Likewise the inter-pod link, only used by a cluster of several pods.
  if (const json* inter = p.find(j, "", "inter_pod", m.pods() > 1))
    m.inter_pod = p.link(*inter, "inter_pod");
  else
    m.inter_pod = m.inter_node;
  validate_machine(m);
  return m;
}

json machine_to_json(const MachineSpec& m) {
  json types = json::array();
  for (const DeviceSpec& d : m.device_types)
    types.push_back({{"name", d.name},
                     {"kind", d.kind},
                     {"peak_flops_fp32", d.peak_flops_fp32},
                     {"peak_flops_fp16", d.peak_flops_fp16},
                     {"peak_flops_bf16", d.peak_flops_bf16},
                     {"peak_flops_fp8", d.peak_flops_fp8},
                     {"memory_bandwidth", d.memory_bandwidth},
                     {"memory_bytes", d.memory_bytes},
                     {"compute_efficiency", d.compute_efficiency},
                     {"fp8_compute_efficiency", d.fp8_compute_efficiency},
                     {"memory_efficiency", d.memory_efficiency},
                     {"launch_latency", d.launch_latency},
                     {"sm_count", d.sm_count},
                     {"fused_attention", d.fused_attention},
                     {"fused_attention_forward_efficiency", d.fused_attention_forward_efficiency},
                     {"fused_attention_backward_efficiency", d.fused_attention_backward_efficiency},
                     {"fused_elementwise", d.fused_elementwise},
                     {"skips_data_gradients", d.skips_data_gradients},
                     {"lowers_convolutions_through_memory", d.lowers_convolutions_through_memory},
                     {"transcendental_seconds", d.transcendental_seconds},
                     {"erf_seconds", d.erf_seconds},
                     {"depthwise_mac_seconds", d.depthwise_mac_seconds},
                     {"gemm_rates", d.gemm_rates},
                     {"update_rates", d.update_rates}});
  json j = {{"name", m.name},
            {"description", m.description},
            {"source", m.source},
            {"num_nodes", m.num_nodes},
            {"max_nodes", m.max_nodes},
            {"devices_per_node", m.devices_per_node},
            {"devices_per_island", m.devices_per_island},
            {"device_types", types},
            {"intra_island", link_to_json(m.intra_island)},
            {"inter_island", link_to_json(m.inter_island)},
            {"inter_node", link_to_json(m.inter_node)}};
  if (m.nodes_per_pod > 0) {
    j["nodes_per_pod"] = m.nodes_per_pod;
    j["inter_pod"] = link_to_json(m.inter_pod);
  }
  if (!m.node_device_type.empty()) j["node_device_type"] = m.node_device_type;
  return j;
}

}  // namespace unity
