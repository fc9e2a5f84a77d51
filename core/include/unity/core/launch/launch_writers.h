#pragma once
// Launch files for the frameworks engineers train with, written from a LaunchSpec as plain text
// (no framework installed): Megatron-LM's pretrain_gpt.py arguments as a shell script, a
// torchtitan job TOML, a DeepSpeed config JSON (in a shell script with Megatron-DeepSpeed's
// arguments where the plan has TP or PP > 1). Every flag and key is one its framework's sources
// define (framework_names_data.h, docs/export.md names the versions); what a framework cannot run
// is refused with the reason, never approximated silently.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "unity/core/launch/launch_spec.h"

namespace unity::launch {

enum class Framework { Megatron, Torchtitan, DeepSpeed };
inline constexpr Framework kFrameworks[] = {Framework::Megatron, Framework::Torchtitan,
                                            Framework::DeepSpeed};
// "megatron", "torchtitan", "deepspeed"; throws InputError naming the three.
Framework framework_from_string(std::string_view name);
std::string_view to_string(Framework f);
std::string_view display_name(Framework f);  // "Megatron-LM", "torchtitan", "DeepSpeed"

// The lists of names a launch file is checked against.
enum class NameList { Megatron, MegatronDeepSpeed, Torchtitan, DeepSpeed };
std::span<const std::string_view> accepted_names(NameList list);
std::string_view names_source(NameList list);  // the sources and revision they come from

struct LaunchFile {
  std::string text;
  // Every flag ("--num-layers") or key ("parallelism.tensor_parallel_degree",
  // "zero_optimization.stage") the file sets for the framework, with the list it belongs to.
  std::vector<std::pair<NameList, std::string>> names;
  // What the framework does its own way where the plan is close enough to run (torchtitan's FSDP
  // for a ZeRO stage, say): printed beside the file.
  std::vector<std::string> notes;
};

// Megatron-LM's own layout rules, each violation naming its rule: TP divides the heads, the KV
// heads and the FFN width; the stages cut the layers as Megatron can (evenly, or fewer in the
// first and last stage; with virtual stages any cut, written as a layout); global batch =
// micro-batch x DP x accumulation; TP communication overlap needs sequence parallelism; with
// experts, the expert grid folds into the dense one (TP x CP x DP = ETP x EP x EDP), EP divides the
// experts, ETP their width, TP the shared experts', and the all-to-all overlap has expert
// parallelism, virtual stages where PP > 1, no full recomputation and bf16 or fp16.
std::vector<std::string> megatron_layout_violations(const LaunchSpec& spec);
// Whether the model chunks hold unequal layers, and then Megatron-Core's
// --pipeline-model-parallel-layout of them ("Et*2|(t*3|)*29t*3|t*2L": stages in model order).
bool uneven_chunks(const LaunchSpec& spec);
std::string pipeline_layout(const LaunchSpec& spec);

// Why `framework` cannot run `spec` (Megatron: its layout rules among them); empty: it can.
std::vector<std::string> cannot_run(const LaunchSpec& spec, Framework framework);

// The launch file; call only where cannot_run is empty (throws InputError otherwise).
LaunchFile write_launch(const LaunchSpec& spec, Framework framework);
LaunchFile write_megatron(const LaunchSpec& spec);
LaunchFile write_torchtitan(const LaunchSpec& spec);
LaunchFile write_deepspeed(const LaunchSpec& spec);

namespace detail {
// Framework-specific refusals (the writers' files).
std::vector<std::string> megatron_cannot_run(const LaunchSpec& spec);
std::vector<std::string> torchtitan_cannot_run(const LaunchSpec& spec);
std::vector<std::string> deepspeed_cannot_run(const LaunchSpec& spec);
// torchtitan's mixture-of-experts flavor of `model`, as what its train spec lacks: pipelining
// (qwen3, gpt_oss) and SDPA, the only attention its context parallelism takes (FlexAttention's
// flavors). nullopt where no flavor matches the model.
struct TorchtitanFlavorLimits {
  std::string flavor;  // "qwen3 30B-A3B"
  bool pipelines = true, sdpa = true;
  // Float8 with tensor parallelism (its deepseek_v3's parallelize refuses tensorwise float8 where
  // TP > 1).
  bool fp8_tensor_parallel = true;
};
std::optional<TorchtitanFlavorLimits> torchtitan_moe_flavor(const ModelShape& model);
// What Megatron-DeepSpeed's GPT (DeepSpeed's model-parallel path) lacks to build `model`,
// whatever the layout; empty where it builds it. DeepSpeed's data-parallel path trains the
// Hugging Face model itself and lacks none of it.
std::vector<std::string> megatron_deepspeed_lacks(const ModelShape& model);
// Megatron's model flags (shared by Megatron-LM and Megatron-DeepSpeed, which differ in a few
// names): appended to `args` as "--flag value" items, names recorded.
struct ArgList {
  NameList list;
  std::vector<std::string> lines;
  std::vector<std::pair<NameList, std::string>> names;
  void add(const std::string& flag, const std::string& value = {});
};
// The vocabulary divisor that keeps Megatron's padding (to a multiple of it x TP) at the plan's
// vocabulary: the largest power of two up to 128 with divisor x TP dividing it.
int vocab_divisor(std::int64_t vocab, int tp);
// Megatron's sequence parallelism (Megatron-LM's and Megatron-DeepSpeed's
// tensor_parallel/mappings.py) scatters each rank's share of the sequence over TP and asserts that
// it divides: what the plan breaks of that, if it does.
std::optional<std::string> sequence_parallel_split_violation(const LaunchSpec& spec);
// The shell lines that start `script` with torchrun on the plan's nodes.
std::string torchrun_lines(const LaunchSpec& spec, const std::string& script,
                           const std::vector<std::string>& arrays);
}  // namespace detail

}  // namespace unity::launch
