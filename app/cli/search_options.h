#pragma once
// The search flags `optimize` and `compare` share: alpha, budget, rule files, pins and vetoes,
// graph splitting and the optimizer whose state the memory model counts.
#include <CLI/CLI.hpp>

#include "unity/core/plan_optimizer.h"

namespace unity::cli {

// `o` must outlive the parse.
void add_search_options(CLI::App* cmd, OptimizeOptions& o);
// --batch: the global batch of a zoo model (0: the paper's per-device batch x devices), for
// load_model_for_devices.
void add_batch_option(CLI::App* cmd, std::int64_t& batch);

}  // namespace unity::cli
