#pragma once
// Each `unity` subcommand registers itself on the CLI11 app; the callback runs after parsing and
// throws unity::InputError for bad input (exit code 1).
#include <CLI/CLI.hpp>

namespace unity::cli {

void add_models_command(CLI::App& app);
void add_import_command(CLI::App& app);
void add_show_command(CLI::App& app);
void add_machines_command(CLI::App& app);
void add_optimize_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_project_command(CLI::App& app);
void add_rules_command(CLI::App& app);
void add_export_command(CLI::App& app);

}  // namespace unity::cli
