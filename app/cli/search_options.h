#pragma once
// The search flags `optimize` and `compare` share: alpha, budget, rule files, pins and vetoes,
// graph splitting and the optimizer whose state the memory model counts.
#include <CLI/CLI.hpp>

#include "unity/core/plan_optimizer.h"

namespace unity::cli {

// `o` must outlive the parse.
void add_search_options(CLI::App* cmd, OptimizeOptions& o);

}  // namespace unity::cli
