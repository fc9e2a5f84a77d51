#include "unity/use_cases/rule_choices.h"

#include <algorithm>

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity::use_cases {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

RuleLocation parse(const std::string& where) {
  RuleLocation location = parse_rule_location(where);
  if (location.rule.empty())
    throw InputError(fmt::format("'{}': expected RULE or RULE@NODE", where));
  return location;
}

}  // namespace

nlohmann::json stored_match(const RuleLocation& location) {
  if (location.node.empty()) return nullptr;
  return {{"node", location.node}};
}

std::optional<std::string> location_text(const projects::PinVeto& choice) {
  if (choice.match.is_null()) return choice.rule;
  if (choice.match.is_object() && choice.match.size() == 1 && choice.match.contains("node") &&
      choice.match["node"].is_string())
    return to_string(RuleLocation{choice.rule, choice.match["node"].get<std::string>()});
  return std::nullopt;
}

RuleChoices stored_choices(const projects::Project& project, std::int64_t model_id) {
  RuleChoices out;
  for (const auto& choice : project.pins_vetoes(model_id)) {
    const auto where = location_text(choice);
    if (!where) continue;
    auto& list = choice.state == projects::RuleChoice::Pin ? out.pins : out.vetoes;
    if (!contains(list, *where)) list.push_back(*where);
  }
  return out;
}

void set_choice(projects::Project& project, const std::vector<std::optional<std::int64_t>>& models,
                const std::string& where, std::optional<projects::RuleChoice> state) {
  const RuleLocation location = parse(where);
  const nlohmann::json match = stored_match(location);
  for (const auto& id : models) {
    if (state)
      project.set_pin_veto(id, location.rule, match, *state);
    else
      project.clear_pin_veto(id, location.rule, match);
  }
}

void replace_choices(projects::Project& project, std::int64_t model_id,
                     const RuleChoices& choices) {
  for (const auto& choice : project.pins_vetoes(model_id)) {
    if (!choice.model_id) continue;  // a choice for every model stays
    const auto where = location_text(choice);
    const bool kept =
        where &&
        contains(choice.state == projects::RuleChoice::Pin ? choices.pins : choices.vetoes, *where);
    if (!kept) project.clear_pin_veto(model_id, choice.rule, choice.match);
  }
  for (const auto& p : choices.pins) set_choice(project, {model_id}, p, projects::RuleChoice::Pin);
  for (const auto& v : choices.vetoes)
    set_choice(project, {model_id}, v, projects::RuleChoice::Veto);
}

void merge_choices(const RuleChoices& stored, std::vector<std::string>& pins,
                   std::vector<std::string>& vetoes) {
  const auto own_pins = pins;
  const auto own_vetoes = vetoes;
  for (const auto& [from, into] :
       {std::pair{&stored.pins, &pins}, std::pair{&stored.vetoes, &vetoes}})
    for (const auto& where : *from)
      if (!contains(own_pins, where) && !contains(own_vetoes, where) && !contains(*into, where))
        into->push_back(where);
}

}  // namespace unity::use_cases
