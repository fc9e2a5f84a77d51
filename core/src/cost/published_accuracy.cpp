#include "unity/core/cost/published_accuracy.h"

#include <fmt/format.h>

namespace unity {

// Measured by unity_bench_h100_runs and unity_bench_large_models (docs/accuracy.md); the rows'
// tests check that each still holds.
const PublishedAccuracy& h100_published_accuracy() {
  static const PublishedAccuracy r{"H100",
                                   "Megatron-LM's weak-scaling runs, Megatron-Core r0.8.0, "
                                   "Llama 3 405B's pre-training at 8K and 131K tokens and "
                                   "Megatron-LM's FP8 Llama 3 runs",
                                   15,
                                   12,
                                   -0.0059,
                                   0.449};
  return r;
}

const PublishedAccuracy& a100_published_accuracy() {
  static const PublishedAccuracy r{"A100", "Megatron-LM's Table 1, SC'21", 10, 3, -0.135, -0.058};
  return r;
}

std::string PublishedAccuracy::describe() const {
  return fmt::format(
      "{}: {} of {} published runs within 10% ({:+.1f}% to {:+.1f}%; {}; "
      "docs/accuracy.md)",
      family, within_10_percent, rows, lowest_error * 100, highest_error * 100, runs);
}

std::optional<PublishedAccuracy> published_accuracy(const MachineSpec& machine) {
  if (machine.device_types.empty()) return std::nullopt;
  const std::string& name = machine.device_types.front().name;
  for (const PublishedAccuracy* r : {&h100_published_accuracy(), &a100_published_accuracy()})
    if (name.find(r->family) != std::string::npos) return *r;
  return std::nullopt;
}

}  // namespace unity
