#pragma once
// Whether a plan's busiest device holds what the plan keeps, with its margin: fits, tight (it fits
// with less than a tenth of the device's memory to spare, about what a caching allocator's
// fragmentation and the communication libraries' buffers take, which the model does not count),
// or does not fit. What `unity optimize` and `unity show` print beside every plan.
#include <string>
#include <string_view>

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

struct MachineSpec;
// A plan's verdict on its machine's smallest device; a plan the mapping found not to fit (a
// heterogeneous machine's busiest device may be another) does not fit.
MemoryVerdict plan_memory_verdict(double peak_bytes, bool fits, const MachineSpec& machine);

}  // namespace unity
