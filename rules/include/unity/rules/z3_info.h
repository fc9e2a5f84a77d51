#pragma once
// Version of the Z3 library the verifier runs on (for `unity --version` and the About box): rule
// verification results can differ between solver versions, so users need to see which one ran.
#include <string>

namespace unity::rules {

// "4.8.12" style, as reported by the Z3 library loaded at run time (not the header we compiled with).
std::string z3_version();

}  // namespace unity::rules
