#include "unity/projects/records.h"

#include <array>
#include <utility>

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity::projects {
namespace {

// The names search_steps.kind stores. Never rename one: files in the wild hold them.
constexpr std::array<std::pair<SearchEvent::Kind, std::string_view>, 6> kKindNames = {{
    {SearchEvent::Kind::Started, "started"},
    {SearchEvent::Kind::CandidateCosted, "candidate_costed"},
    {SearchEvent::Kind::NewBest, "new_best"},
    {SearchEvent::Kind::Pruned, "pruned"},
    {SearchEvent::Kind::StepDone, "step_done"},
    {SearchEvent::Kind::Finished, "finished"},
}};

}  // namespace

std::string_view to_string(Status status) {
  switch (status) {
    case Status::Running:
      return "running";
    case Status::Completed:
      return "completed";
    case Status::Cancelled:
      return "cancelled";
    case Status::Interrupted:
      return "interrupted";
    case Status::Failed:
      return "failed";
  }
  return "failed";
}

std::optional<Status> status_from_string(std::string_view name) {
  for (const Status s :
       {Status::Running, Status::Completed, Status::Cancelled, Status::Interrupted, Status::Failed})
    if (to_string(s) == name) return s;
  return std::nullopt;
}

const char* event_kind_name(SearchEvent::Kind kind) {
  for (const auto& [k, name] : kKindNames)
    if (k == kind) return name.data();
  return "unknown";
}

SearchEvent::Kind event_kind_from_name(std::string_view name) {
  for (const auto& [k, n] : kKindNames)
    if (n == name) return k;
  throw InputError(fmt::format("unknown search step kind '{}' in the project file", name));
}

std::string_view to_string(RuleChoice choice) { return choice == RuleChoice::Pin ? "pin" : "veto"; }

}  // namespace unity::projects
