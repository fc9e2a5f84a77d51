#pragma once
// Whether a plan's busiest device holds what the plan keeps, with its margin: fits, tight (it fits
// with less than a tenth of the device's memory to spare, about what a caching allocator's
// fragmentation and the communication libraries' buffers take, which the model does not count),
// or does not fit. What `unity optimize` and `unity show` print beside every plan.
#include <optional>
#include <string>
#include <string_view>

#include "unity/core/cost/cost_model.h"
#include "unity/core/pcg/data_type.h"

namespace unity {

enum class MemoryFit { Fits, Tight, DoesNotFit };
std::string_view to_string(MemoryFit f);  // "fits", "tight", "does-not-fit"

struct MemoryVerdict {
  MemoryFit fit = MemoryFit::DoesNotFit;
  double capacity = 0;  // bytes of the smallest device
  double margin = 0;    // capacity - peak: negative when it does not fit
  // "fits, 15.8 GiB to spare", "tight: 3.1 GiB to spare of 80.0 GiB",
  // "does not fit: 33.0 GiB over 80.0 GiB"
  std::string describe() const;
};

// The share of a device's memory under which a plan that fits is tight.
inline constexpr double kTightMemoryShare = 0.1;

MemoryVerdict memory_verdict(double peak_bytes, double capacity_bytes);

// The least memory training takes whatever the layout: the model's weights, gradients and
// optimizer state whole (`bytes`: 18 a parameter in bf16 with Adam, its fp32 gradients and master
// weights), and how many devices of `capacity` hold them once ZeRO-3 spreads them evenly
// (`devices`), before any activation, workspace or buffer. What a plan that does not fit is told.
struct ModelStateFloor {
  double bytes = 0;
  int devices = 0;
  // "the weights, gradients and optimizer state are 134.6 GiB (18 bytes a parameter): fully
  // sharded (ZeRO-3), at least 2 devices of 80.0 GiB before any activation"
  std::string describe(double parameters, double capacity) const;
};
ModelStateFloor model_state_floor(double parameters, DataType dtype, Optimizer optimizer,
                                  double capacity);

struct Plan;
// What a plan that does not fit is told of that floor (its summary's, for its model's parameters),
// and whether the floor alone asks for more devices than the plan has: "the weights, gradients and
// optimizer state are 134.6 GiB (...) before any activation, more than the 1 planned on". nullopt
// where the plan fits or no floor was recorded.
std::optional<std::string> memory_floor_statement(const Plan& plan);

struct MachineSpec;
// A plan's verdict on its machine's smallest device; a plan the mapping found not to fit (a
// heterogeneous machine's busiest device may be another) does not fit.
MemoryVerdict plan_memory_verdict(double peak_bytes, bool fits, const MachineSpec& machine);

}  // namespace unity
