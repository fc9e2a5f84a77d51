// Fuzzes the machine JSON loader (`--machine FILE.json`): parsing, validation, the --nodes/--gpus
// selection, and costing a small model on an accepted machine (the cost model divides by the
// file's bandwidths and FLOP/s, which validation must have made safe).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "fuzz_contract.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/model_zoo.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  unity::fuzz::record_input(data, size);
  const auto j = unity::fuzz::parse_json(data, size);
  if (!j) return 0;
  std::optional<unity::MachineSpec> machine;
  unity::fuzz::expect_user_errors_only([&] { machine = unity::machine_from_json(*j); });
  if (!machine) return 0;
  // What `unity machines`-style listings and project files store must read back.
  const unity::MachineSpec again = unity::machine_from_json(unity::machine_to_json(*machine));
  (void)again;

  static const unity::Graph model = unity::zoo::build("mnist-mlp", 8);
  for (const unity::MachineSelection selection :
       {unity::MachineSelection{}, unity::MachineSelection{1, 0}, unity::MachineSelection{0, 2},
        unity::MachineSelection{2, 0}}) {
    unity::fuzz::expect_user_errors_only([&] {
      const unity::MachineSpec selected = unity::select_machine(*machine, selection);
      // Data parallelism over at most 4 devices keeps a run short; the cost model sees every
      // device kind and link class of the file either way.
      if (selected.num_devices() > 4) return;
      unity::OptimizeOptions options;
      options.mode = "data-parallel";
      (void)unity::optimize_plan(model, selected, options);
    });
  }
  return 0;
}
