// What the three writers share: the framework names, the lists their names are checked against,
// the argument list, and the torchrun command a Megatron script ends with.
#include "unity/core/launch/launch_writers.h"

#include <algorithm>

#include <fmt/format.h>

#include "launch/framework_names_data.h"
#include "unity/core/errors.h"

namespace unity::launch {

Framework framework_from_string(std::string_view name) {
  if (name == "megatron") return Framework::Megatron;
  if (name == "torchtitan") return Framework::Torchtitan;
  if (name == "deepspeed") return Framework::DeepSpeed;
  throw InputError(fmt::format("unknown framework '{}' (megatron, torchtitan or deepspeed)", name));
}

std::string_view to_string(Framework f) {
  switch (f) {
    case Framework::Megatron:
      return "megatron";
    case Framework::Torchtitan:
      return "torchtitan";
    case Framework::DeepSpeed:
      return "deepspeed";
  }
  return "?";
}

std::string_view display_name(Framework f) {
  switch (f) {
    case Framework::Megatron:
      return "Megatron-LM";
    case Framework::Torchtitan:
      return "torchtitan";
    case Framework::DeepSpeed:
      return "DeepSpeed";
  }
  return "?";
}

std::span<const std::string_view> accepted_names(NameList list) {
  switch (list) {
    case NameList::Megatron:
      return names::kMegatronFlags;
    case NameList::MegatronDeepSpeed:
      return names::kMegatronDeepSpeedFlags;
    case NameList::Torchtitan:
      return names::kTorchtitanKeys;
    case NameList::DeepSpeed:
      return names::kDeepSpeedKeys;
  }
  return {};
}

std::string_view names_source(NameList list) {
  switch (list) {
    case NameList::Megatron:
      return "Megatron-LM core_v0.15.0 (megatron/training/arguments.py)";
    case NameList::MegatronDeepSpeed:
      return "Megatron-DeepSpeed f4157bea (megatron/arguments.py) and DeepSpeed's launcher flags";
    case NameList::Torchtitan:
      return "torchtitan v0.2.2 (torchtitan/config/job_config.py)";
    case NameList::DeepSpeed:
      return "DeepSpeed 0.16.5 pre-release 38327e07 (deepspeed/runtime)";
  }
  return "?";
}

std::vector<std::string> cannot_run(const LaunchSpec& spec, Framework framework) {
  switch (framework) {
    case Framework::Megatron:
      return detail::megatron_cannot_run(spec);
    case Framework::Torchtitan:
      return detail::torchtitan_cannot_run(spec);
    case Framework::DeepSpeed:
      return detail::deepspeed_cannot_run(spec);
  }
  return {};
}

LaunchFile write_launch(const LaunchSpec& spec, Framework framework) {
  const auto reasons = cannot_run(spec, framework);
  if (!reasons.empty())
    throw InputError(fmt::format("{} cannot run this plan: {}", display_name(framework),
                                 fmt::join(reasons, "; ")));
  switch (framework) {
    case Framework::Megatron:
      return write_megatron(spec);
    case Framework::Torchtitan:
      return write_torchtitan(spec);
    case Framework::DeepSpeed:
      return write_deepspeed(spec);
  }
  return {};
}

namespace detail {

void ArgList::add(const std::string& flag, const std::string& value) {
  lines.push_back(value.empty() ? flag : flag + " " + value);
  names.emplace_back(list, flag);
}

int vocab_divisor(std::int64_t vocab, int tp) {
  for (int d = 128; d > 1; d /= 2)
    if (vocab % (static_cast<std::int64_t>(d) * tp) == 0) return d;
  return 1;
}

std::optional<std::string> sequence_parallel_split_violation(const LaunchSpec& s) {
  if (!s.sequence_parallel || s.tp <= 1 || s.model.seq % (std::int64_t{s.tp} * s.cp) == 0)
    return std::nullopt;
  return fmt::format(
      "rule 'sequence parallelism splits each rank's sequence over TP': {} tokens{} on TP {}",
      s.model.seq, s.cp > 1 ? fmt::format(" over CP {}", s.cp) : std::string(), s.tp);
}

std::string torchrun_lines(const LaunchSpec& spec, const std::string& script,
                           const std::vector<std::string>& arrays) {
  const int per_node = std::min(spec.devices, spec.devices_per_node);
  const int nodes = (spec.devices + per_node - 1) / per_node;
  std::string text = fmt::format(
      "# {} GPUs: {} node{} of {}. Run this on every node with NODE_RANK set (or under srun).\n"
      "torchrun --nproc-per-node {} --nnodes {} --node-rank \"${{NODE_RANK:-0}}\" \\\n"
      "  --master-addr \"${{MASTER_ADDR:-localhost}}\" --master-port \"${{MASTER_PORT:-6000}}\" "
      "\\\n  {}",
      spec.devices, nodes, nodes == 1 ? "" : "s", per_node, per_node, nodes, script);
  for (const auto& a : arrays) text += fmt::format(" \\\n  \"${{{}[@]}}\"", a);
  return text + "\n";
}

}  // namespace detail

}  // namespace unity::launch
