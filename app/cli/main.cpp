// `unity`: everything the explorer does, headless. Exit codes (DESIGN.md): 0 success, 1 bad input
// (message on stderr, nothing written), 2 internal error.
#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "commands.h"
#include "unity/core/errors.h"
#include "unity/executor/blas_core.h"
#include "version_info.h"

int main(int argc, char** argv) {
  unity::executor::reexec_with_openblas_core(argv);
  CLI::App app{"Unity: joint algebraic and parallelisation optimisation of DNN training (OSDI'22)",
               "unity"};
  app.require_subcommand(1);
  app.set_version_flag("--version", unity::cli::version_text());
  unity::cli::add_models_command(app);
  unity::cli::add_import_command(app);
  unity::cli::add_show_command(app);
  unity::cli::add_machines_command(app);
  unity::cli::add_optimize_command(app);
  unity::cli::add_compare_command(app);
  unity::cli::add_run_command(app);
  unity::cli::add_calibrate_command(app);
  unity::cli::add_project_command(app);
  unity::cli::add_rules_command(app);
  unity::cli::add_export_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 1;
  } catch (const unity::InputError& e) {
    fmt::print(stderr, "unity: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "unity: internal error: {}\n", e.what());
    return 2;
  }
  return 0;
}
