#pragma once
#include <string>

namespace unity::cli {

// Unity's version and the versions of the libraries it runs on (Z3, SQLite, backends).
std::string version_text();

}  // namespace unity::cli
