#pragma once
// Version of the SQLite library that reads and writes project files (for `unity --version` and the
// About box): WAL mode and the schema migrations depend on it.
#include <string>

namespace unity::projects {

// "3.40.1" style, from the library loaded at run time.
std::string sqlite_version();

}  // namespace unity::projects
