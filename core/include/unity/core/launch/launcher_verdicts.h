#pragma once
// Which frameworks' launchers run a plan as it is (`unity export --to F` writes it without
// --nearest), and what stops each of the others: what `unity optimize` states beside a decoder's
// plan, so that an engineer knows before exporting.
#include <optional>
#include <string>
#include <vector>

#include "unity/core/launch/launch_writers.h"
#include "unity/core/plan/plan.h"

namespace unity::launch {

struct LauncherVerdict {
  Framework framework = Framework::Megatron;
  std::vector<std::string> refusals;  // empty: the framework runs the plan as it is
  bool runs() const { return refusals.empty(); }
};

struct LauncherVerdicts {
  std::vector<LauncherVerdict> verdicts;  // Megatron-LM's, torchtitan's and DeepSpeed's
  // What stops them all is the joint search's own layout (a layer split its own way, a stage cut
  // inside a layer), which `optimize --launchable` leaves out.
  bool searched_own_way = false;
  const LauncherVerdict& of(Framework f) const;  // one of the three
  bool all_run() const;
  // "Megatron-LM and torchtitan run it as it is; DeepSpeed does not: REASON", each framework
  // that does not with its first reason (one reason where all share it).
  std::string describe() const;
};

// nullopt for a model that is not a decoder-only transformer (no launcher trains it).
std::optional<LauncherVerdicts> launcher_verdicts(const Plan& plan);

// What stops `framework` from training `model` on `machine` in any layout (its layers, its
// dtype): its verdict on the simplest layout, TP 1 and PP 1 with every device a data-parallel
// copy, which each framework runs where it runs the model at all. Empty where it runs that
// layout, or where the model has no such layout (not a decoder, a batch the devices do not
// split): the search then decides. `unity optimize --launcher F` asks this before searching.
std::vector<std::string> model_refusals(const Graph& model, const MachineSpec& machine,
                                        Framework framework);

}  // namespace unity::launch
