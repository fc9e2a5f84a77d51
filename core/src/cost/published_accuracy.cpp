#include "unity/core/cost/published_accuracy.h"

#include <fmt/format.h>

namespace unity {

namespace {

bool has_experts(const Graph& model) {
  for (const auto& [id, n] : model.nodes())
    if (n.op.type == OpType::Experts) return true;
  return false;
}

}  // namespace

// Measured by unity_bench_h100_runs and unity_bench_large_models (docs/accuracy.md); the rows'
// tests check that each still holds.
const PublishedAccuracy& h100_published_accuracy() {
  static const PublishedAccuracy r{"H100",
                                   "",
                                   "Megatron-LM's weak-scaling runs, Megatron-Core r0.8.0, "
                                   "Llama 3 405B's pre-training at 8K and 131K tokens, "
                                   "Megatron-LM's FP8 Llama 3 runs and NeMo 25.11's",
                                   18,
                                   16,
                                   -0.0853,
                                   0.4497};
  return r;
}

const PublishedAccuracy& a100_published_accuracy() {
  static const PublishedAccuracy r{"A100",  "",     "Megatron-LM's Table 1, SC'21", 10, 10,
                                   -0.0955, -0.0094};
  return r;
}

const PublishedAccuracy& h100_moe_published_accuracy() {
  static const PublishedAccuracy r{"H100",
                                   "mixture of experts",
                                   "NVIDIA's Megatron-MoE model zoo (Qwen3-235B-A22B, cross-node, "
                                   "intra-node and at 16K-128K tokens), NeMo's DeepSeek-V3 and "
                                   "Megatron-Core's Mixtral 8x7B",
                                   11,
                                   7,
                                   -0.13406,
                                   0.84787};
  return r;
}

// The same rows by how many of a layer's experts a device holds: 4 or fewer (Qwen3 with EP 32,
// DeepSeek-V3 with EP 64, Mixtral with EP 8) and 16 (Qwen3 with EP 8: the intra-node layouts and
// the long-context runs).
const PublishedAccuracy& h100_moe_few_experts_published_accuracy() {
  static const PublishedAccuracy r{"H100",
                                   "mixture of experts, fewer than 8 a device",
                                   "NVIDIA's Megatron-MoE model zoo (Qwen3-235B-A22B with EP 32), "
                                   "NeMo's DeepSeek-V3 and Megatron-Core's Mixtral 8x7B",
                                   4,
                                   3,
                                   -0.00794,
                                   0.12526};
  return r;
}

const PublishedAccuracy& h100_moe_many_experts_published_accuracy() {
  static const PublishedAccuracy r{"H100",
                                   "mixture of experts, 8 or more a device",
                                   "NVIDIA's Megatron-MoE model zoo (Qwen3-235B-A22B with EP 8, "
                                   "intra-node and at 16K-128K tokens)",
                                   7,
                                   4,
                                   -0.13406,
                                   0.84787};
  return r;
}

// NeMo 25.11's fp8 Llama 3 runs on DGX B200 and GB200 NVL72 (tests/nemo_runs.h), in tokens/s.
const PublishedAccuracy& b200_published_accuracy() {
  static const PublishedAccuracy r{"B200",
                                   "",
                                   "Megatron-Bridge's fp8 Llama 3 runs on DGX B200 and GB200 "
                                   "NVL72, NeMo 25.11",
                                   4,
                                   3,
                                   0.078,
                                   0.1564};
  return r;
}

// NVIDIA's Megatron-MoE model zoo on GB200 NVL72 (tests/moe_runs.h), in Megatron's TFLOP/s: both
// hold 8 or more of a layer's experts a device.
const PublishedAccuracy& b200_moe_published_accuracy() {
  static const PublishedAccuracy r{"B200",
                                   "mixture of experts",
                                   "NVIDIA's Megatron-MoE model zoo on GB200 NVL72: "
                                   "Qwen3-235B-A22B in bf16, DeepSeek-V3 in MXFP8",
                                   2,
                                   0,
                                   0.12001,
                                   0.39379};
  return r;
}

std::string PublishedAccuracy::describe() const {
  return fmt::format(
      "{}{}: {} of {} published runs within 10% ({:+.1f}% to {:+.1f}%; {}; "
      "docs/accuracy.md)",
      family, kind.empty() ? "" : fmt::format(" ({})", kind), within_10_percent, rows,
      lowest_error * 100, highest_error * 100, runs);
}

std::optional<PublishedAccuracy> published_accuracy(const MachineSpec& machine,
                                                    bool mixture_of_experts,
                                                    std::int64_t experts_per_device) {
  if (machine.device_types.empty()) return std::nullopt;
  const std::string& name = machine.device_types.front().name;
  const PublishedAccuracy& moe = experts_per_device <= 0 ? h100_moe_published_accuracy()
                                 : experts_per_device >= kManyExpertsPerDevice
                                     ? h100_moe_many_experts_published_accuracy()
                                     : h100_moe_few_experts_published_accuracy();
  for (const PublishedAccuracy* r : {&h100_published_accuracy(), &moe, &a100_published_accuracy(),
                                     &b200_published_accuracy(), &b200_moe_published_accuracy()})
    if (name.find(r->family) != std::string::npos && r->kind.empty() != mixture_of_experts)
      return *r;
  return std::nullopt;
}

std::optional<PublishedAccuracy> published_accuracy(const MachineSpec& machine, const Graph& model,
                                                    std::int64_t experts_per_device) {
  return published_accuracy(machine, has_experts(model), experts_per_device);
}

std::optional<std::string> published_accuracy_statement(const MachineSpec& machine,
                                                        const Graph& model,
                                                        std::int64_t experts_per_device) {
  const bool moe = has_experts(model);
  if (const auto r = published_accuracy(machine, moe, experts_per_device)) return r->describe();
  if (machine.device_types.empty() || machine.device_types.front().kind == "cpu")
    return std::nullopt;
  return fmt::format(
      "no published run of a {} on {} compared yet: the cost model's mechanisms alone "
      "(docs/accuracy.md lists what was)",
      moe ? "mixture of experts" : "dense model", machine.device_types.front().name);
}

}  // namespace unity
