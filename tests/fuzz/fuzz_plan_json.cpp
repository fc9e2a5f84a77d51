// Fuzzes the plan JSON loader (`unity show plan.json`, `unity run plan.json`). An accepted plan
// must write back (plan_to_json) into a file that reads again, as `unity optimize --out` files do.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "fuzz_contract.h"
#include "unity/core/pcg/dot_export.h"
#include "unity/core/plan/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  unity::fuzz::record_input(data, size);
  const auto j = unity::fuzz::parse_json(data, size);
  if (!j) return 0;
  std::optional<unity::Plan> plan;
  unity::fuzz::expect_user_errors_only([&] {
    if (unity::is_plan_json(*j)) plan = unity::plan_from_json(*j);
  });
  if (!plan) return 0;
  plan->pcg.validate();
  const unity::Plan again = unity::plan_from_json(unity::plan_to_json(*plan));
  (void)again;
  (void)unity::graph_to_dot(plan->pcg);
  return 0;
}
