#include "unity/projects/sqlite_info.h"

#include <sqlite3.h>

namespace unity::projects {

// sqlite3_libversion() rather than SQLITE_VERSION: the shared library may be newer than the header.
std::string sqlite_version() { return sqlite3_libversion(); }

}  // namespace unity::projects
