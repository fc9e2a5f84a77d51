#include "unity/core/plan/memory_verdict.h"

#include <cmath>

#include <fmt/format.h>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/pipeline/pipeline_cost.h"
#include "unity/core/plan/plan.h"
#include "unity/core/search/candidate_cost.h"

namespace unity {
namespace {

std::string gib(double bytes) { return fmt::format("{:.1f} GiB", bytes / double(1 << 30)); }

}  // namespace

std::string_view to_string(MemoryFit f) {
  switch (f) {
    case MemoryFit::Fits:
      return "fits";
    case MemoryFit::Tight:
      return "tight";
    default:
      return "does-not-fit";
  }
}

MemoryVerdict memory_verdict(double peak_bytes, double capacity_bytes) {
  MemoryVerdict v;
  v.capacity = capacity_bytes;
  v.margin = capacity_bytes - peak_bytes;
  if (!std::isfinite(peak_bytes) || v.margin < 0)
    v.fit = MemoryFit::DoesNotFit;
  else if (v.margin < kTightMemoryShare * capacity_bytes)
    v.fit = MemoryFit::Tight;
  else
    v.fit = MemoryFit::Fits;
  return v;
}

MemoryVerdict plan_memory_verdict(double peak_bytes, bool fits, const MachineSpec& machine) {
  MemoryVerdict v = memory_verdict(peak_bytes, smallest_device_memory(machine));
  if (!fits) v.fit = MemoryFit::DoesNotFit;
  return v;
}

ModelStateFloor model_state_floor(double parameters, DataType dtype, Optimizer optimizer,
                                  double capacity) {
  ModelStateFloor f;
  const MemoryBreakdown state = parameter_memory(parameters, dtype, optimizer, 0, 1);
  f.bytes = state.weights + state.gradients + state.optimizer;
  if (capacity > 0) f.devices = static_cast<int>(std::ceil(f.bytes / capacity));
  return f;
}

std::string ModelStateFloor::describe(double parameters, double capacity) const {
  return fmt::format(
      "the weights, gradients and optimizer state are {} ({:.0f} bytes a parameter): fully "
      "sharded (ZeRO-3), at least {} devices of {} before any activation",
      gib(bytes), parameters > 0 ? bytes / parameters : 0.0, devices, gib(capacity));
}

std::optional<std::string> memory_floor_statement(const Plan& plan) {
  const PlanSummary& s = plan.summary;
  const MemoryVerdict memory =
      plan_memory_verdict(s.peak_memory_bytes, s.fits_in_memory, plan.machine);
  if (memory.fit != MemoryFit::DoesNotFit || s.fewest_devices_for_state <= 0) return std::nullopt;
  return ModelStateFloor{s.model_state_bytes, s.fewest_devices_for_state}.describe(
             static_cast<double>(plan.pcg.parameter_count()), memory.capacity) +
         (s.fewest_devices_for_state > s.devices
              ? fmt::format(", more than the {} planned on", s.devices)
              : std::string());
}

std::string MemoryVerdict::describe() const {
  switch (fit) {
    case MemoryFit::Fits:
      return fmt::format("fits, {} to spare", gib(margin));
    case MemoryFit::Tight:
      return fmt::format("tight: {} to spare of {}", gib(margin), gib(capacity));
    default:
      return std::isfinite(margin)
                 ? fmt::format("does not fit: {} over {}", gib(-margin), gib(capacity))
                 : std::string("does not fit");
  }
}

}  // namespace unity
