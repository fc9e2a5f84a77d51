#pragma once
// Pins and vetoes as the user writes them ("RULE" or "RULE@NODE", core's RuleLocation) and as the
// project stores them (a rule and a match object), converted in one place for `unity project
// pin|veto|unpin`, `unity optimize --project` and the explorer's substitution table.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "unity/core/search/substitution_search.h"
#include "unity/projects/project.h"

namespace unity::use_cases {

// "RULE@NODE" -> {"node": NODE}; "RULE" -> null (everywhere). Throws InputError for an empty rule.
nlohmann::json stored_match(const RuleLocation& location);
// The text form of a stored choice; nullopt for a match this build cannot express.
std::optional<std::string> location_text(const projects::PinVeto& choice);

struct RuleChoices {
  std::vector<std::string> pins;
  std::vector<std::string> vetoes;
};

// The choices that hold for `model_id`: its own and those for every model, as text.
RuleChoices stored_choices(const projects::Project& project, std::int64_t model_id);

// Pins, vetoes or (state empty) clears `where` for each model (nullopt: every model).
void set_choice(projects::Project& project, const std::vector<std::optional<std::int64_t>>& models,
                const std::string& where, std::optional<projects::RuleChoice> state);

// Makes the model's own choices exactly these (choices for every model stay as they are).
void replace_choices(projects::Project& project, std::int64_t model_id, const RuleChoices& choices);

// Adds the stored choices to the options' pins and vetoes; where both name the same place, the
// options' own choice wins.
void merge_choices(const RuleChoices& stored, std::vector<std::string>& pins,
                   std::vector<std::string>& vetoes);

}  // namespace unity::use_cases
