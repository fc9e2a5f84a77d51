#pragma once
// The About box text: the versions of everything a bug report needs (Unity, Qt, Z3, SQLite) and the
// execution backends this machine can run.
#include <QString>

namespace unity::explorer {

QString aboutText();  // rich text

}  // namespace unity::explorer
