#pragma once
// How far the cost model's predictions have been from published training runs on a device
// family (docs/accuracy.md): what `unity optimize` states beside a plan, so that a user knows how
// much its kind of prediction has been checked. The rows' tests recompute each record from the
// runs (tests/core/test_h100_dense_runs.cpp, test_megatron_table1.cpp, test_nemo_runs.cpp): a
// record that no longer holds fails them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/graph.h"

namespace unity {

struct PublishedAccuracy {
  std::string_view family;  // "H100", matched in the device's name
  std::string_view kind;    // "" (dense models), or "mixture of experts"
  std::string_view runs;    // which published runs
  int rows = 0;
  int within_10_percent = 0;
  // Predicted throughput / published - 1 (a step time's inverse), the lowest row and the highest.
  double lowest_error = 0;
  double highest_error = 0;
  // "H100: 10 of 12 published runs within 10% (-0.6% to +27.4%; Megatron-LM weak scaling, ...)"
  std::string describe() const;
};

// The record of the machine's first device type's family for the model's kind (a model with
// Experts operators: the mixture-of-experts record, split by `experts_per_device` where the plan
// says how many of a layer's experts a device holds, 0 where it does not); nullopt where no
// published run of that family and kind has been compared with.
std::optional<PublishedAccuracy> published_accuracy(const MachineSpec& machine, const Graph& model,
                                                    std::int64_t experts_per_device = 0);
std::optional<PublishedAccuracy> published_accuracy(const MachineSpec& machine,
                                                    bool mixture_of_experts = false,
                                                    std::int64_t experts_per_device = 0);

// What `optimize` and the explorer state beside a plan: the record's description, or on a GPU
// without one that no published run of the kind has been compared with, so that a prediction
// nobody checked does not read like one that was. Nullopt on CPUs (`unity calibrate` measures
// them).
std::optional<std::string> published_accuracy_statement(const MachineSpec& machine,
                                                        const Graph& model,
                                                        std::int64_t experts_per_device = 0);

// Mixture-of-experts layouts whose devices hold this many of a layer's experts or more are
// checked on their own rows: many small expert GEMMs a device, the regime the joint search
// favours inside an NVLink domain.
inline constexpr std::int64_t kManyExpertsPerDevice = 8;

// Every record, for the tests and the docs.
const PublishedAccuracy& h100_published_accuracy();
const PublishedAccuracy& h100_moe_published_accuracy();
const PublishedAccuracy& h100_moe_few_experts_published_accuracy();
const PublishedAccuracy& h100_moe_many_experts_published_accuracy();
const PublishedAccuracy& a100_published_accuracy();
const PublishedAccuracy& b200_published_accuracy();
const PublishedAccuracy& b200_moe_published_accuracy();

}  // namespace unity
