#include "project_option.h"

namespace unity::cli {

CLI::Option* add_project_option(CLI::App* cmd, std::string& file) {
  return cmd->add_option("--project", file,
                         "Record into this project file (.unity; created when missing), and plan "
                         "with its pins, vetoes, measured operator times and calibrated machine");
}

}  // namespace unity::cli
