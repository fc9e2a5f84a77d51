#pragma once
// The project's rows as JSON objects, the form `unity project show --json` and `unity project
// replay --json` print (docs/projects.md). Optional values that are missing are null.
#include <cstdint>

#include <nlohmann/json.hpp>

#include "unity/projects/records.h"

namespace unity::projects {

nlohmann::json to_json(const ProjectCounts& counts);
nlohmann::json to_json(const ModelRecord& model);
nlohmann::json to_json(const MachineRecord& machine);
nlohmann::json to_json(const SearchRecord& search);
nlohmann::json to_json(const PlanRecord& plan);  // without the plan's summary
nlohmann::json to_json(const RunRecord& run);
nlohmann::json to_json(const PinVeto& choice);
// One recorded event; `seq` is its position in the search (0-based). The candidate hash is 16 hex
// digits, as `unity show` prints structural hashes.
nlohmann::json step_to_json(std::int64_t seq, const SearchEvent& event);

}  // namespace unity::projects
