#pragma once
// How a plan is searched for: the paper's baselines (data parallelism, an expert's strategy, the
// sequential pipeline of algebraic then parallel rewrites) and its joint search. The names are
// what --mode takes, plans and projects store, and the explorer's plan keys are.
#include <string>
#include <string_view>
#include <vector>

namespace unity {

enum class SearchMode { DataParallel, Expert, Sequential, Joint };

std::string_view to_string(SearchMode mode);  // "data-parallel", "expert", "sequential", "joint"
// Throws InputError naming the modes there are.
SearchMode search_mode_from_string(std::string_view name);
// Every mode's name, baselines first, joint last.
const std::vector<std::string>& search_mode_names();

}  // namespace unity
