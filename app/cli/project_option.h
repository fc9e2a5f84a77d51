#pragma once
// `--project FILE` for the planning and running commands; what each records is the use-case
// layer's (projects/include/unity/use_cases, docs/projects.md).
#include <string>

#include <CLI/CLI.hpp>

namespace unity::cli {

// Adds `--project FILE` (created when it does not exist).
CLI::Option* add_project_option(CLI::App* cmd, std::string& file);

}  // namespace unity::cli
