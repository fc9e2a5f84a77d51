// Fuzzes opening a project file (`--project FILE`, `unity project show|replay|upgrade`) whose bytes
// are the input: the header check, SQLite's page check, the schema and identity checks, then
// reading back every kind of row as `unity project show` and the explorer do, and opening it for
// writing (migration and marking dead owners) as `unity optimize --project` does.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "fuzz_contract.h"
#include "temp_input_file.h"
#include "unity/projects/project.h"

namespace {

using unity::projects::Access;
using unity::projects::Project;

// Few rows of each kind: a project's rows are alike, and a run must stay short.
constexpr std::size_t kRowsEach = 3;

void read_everything(const Project& project) {
  (void)project.counts();
  const auto models = project.models();
  for (std::size_t i = 0; i < models.size() && i < kRowsEach; ++i)
    (void)project.load_model(models[i].id);
  const auto machines = project.machines();
  for (std::size_t i = 0; i < machines.size() && i < kRowsEach; ++i)
    (void)project.load_machine(machines[i].id);
  const auto searches = project.searches();
  for (std::size_t i = 0; i < searches.size() && i < kRowsEach; ++i) {
    (void)project.search(searches[i].id);
    (void)project.count_search_steps(searches[i].id);
    (void)project.load_search_steps(searches[i].id);
  }
  const auto plans = project.plans();
  for (std::size_t i = 0; i < plans.size() && i < kRowsEach; ++i)
    (void)project.load_plan(plans[i].id);
  const auto runs = project.runs();
  for (std::size_t i = 0; i < runs.size() && i < kRowsEach; ++i)
    (void)project.run_metrics(runs[i].id);
  (void)project.op_profiles();
  (void)project.pins_vetoes();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  unity::fuzz::record_input(data, size);
  static unity::fuzz::TempInputFile file(".unity");
  const auto& path = file.write(data, size);
  unity::fuzz::expect_user_errors_only(
      [&] { read_everything(Project::open(path, Access::Snapshot)); });
  unity::fuzz::expect_user_errors_only([&] { (void)Project::open(path, Access::ReadWrite); });
  return 0;
}
