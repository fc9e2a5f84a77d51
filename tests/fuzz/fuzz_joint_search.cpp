// Structured fuzzer of the search: a valid graph built from the input (fuzzed_graph.h), searched on
// a small machine with a tiny budget in a mode the input picks. A valid model always gets a plan
// (or, at most, a user-facing "does not fit"), and the plan validates with a positive, finite time.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_contract.h"
#include "fuzzed_graph.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/rules/rule.h"

namespace {

// The hand-written rules (rules/*.json): the paper's substitutions, few enough that a search with a
// tiny budget still applies them. The ~1,750 generated ones would spend a run on matching alone.
// Read from the working folder (scripts/fuzz.sh runs the fuzzers in the repository's root) by a
// relative path, in name order: an absolute path, whose length differs between checkouts, or a
// folder's own order changed which inputs a run tried.
std::shared_ptr<const unity::RuleSet> hand_written_rules() {
  const std::filesystem::path folder = "rules";
  if (!std::filesystem::is_directory(folder)) {
    std::fprintf(stderr, "fuzz_joint_search: no rules/ here: run it in the repository's root\n");
    std::abort();
  }
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator(folder))
    if (f.path().extension() == ".json") files.push_back(f.path());
  std::sort(files.begin(), files.end());
  auto set = std::make_shared<unity::RuleSet>();
  for (const auto& f : files)
    for (auto& r : unity::load_rule_file(f).rules) set->rules.push_back(std::move(r));
  return set;
}

const unity::MachineSpec& machine(int choice) {
  static const std::vector<unity::MachineSpec> machines = {
      unity::load_machine("cpu-local", {0, 2}), unity::load_machine("cpu-local", {0, 4}),
      unity::load_machine("summit", {0, 2}), unity::load_machine("summit", {0, 4}),
      unity::load_machine("summit", {2, 0})};
  return machines[static_cast<std::size_t>(choice) % machines.size()];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  unity::fuzz::record_input(data, size);
  static const auto rules = hand_written_rules();
  FuzzedDataProvider in(data, size);
  unity::OptimizeOptions options;
  constexpr const char* kModes[] = {"joint", "joint", "sequential", "data-parallel", "expert"};
  options.mode = in.PickValueInArray(kModes);
  options.budget = in.ConsumeIntegralInRange(1, 12);
  options.split = in.ConsumeBool();
  options.min_piece = in.ConsumeIntegralInRange(2, 10);
  options.beam = in.ConsumeIntegralInRange(1, 4);
  options.rule_set = rules;
  const unity::MachineSpec& m = machine(in.ConsumeIntegral<std::uint8_t>());
  const int max_ops = in.ConsumeIntegralInRange(2, 24);

  std::optional<unity::Graph> graph;
  try {
    graph = unity::fuzz::FuzzedSpGraph(in, max_ops).build();
  } catch (const unity::InputError& e) {
    // The generator only makes choices whose shapes are valid; one it got wrong is its own bug,
    // not the search's, and stops here loudly.
    std::fprintf(stderr, "fuzz: the graph generator built an invalid graph: %s\n", e.what());
    std::abort();
  }

  std::optional<unity::Plan> plan;
  unity::fuzz::expect_user_errors_only([&] { plan = unity::optimize_plan(*graph, m, options); });
  if (!plan) return 0;
  plan->pcg.validate();
  const double t = plan->summary.iteration_time_ms;
  if (!(std::isfinite(t) && t > 0)) {
    std::fprintf(stderr, "fuzz: the plan's iteration time is %g ms\n", t);
    std::abort();
  }
  return 0;
}
