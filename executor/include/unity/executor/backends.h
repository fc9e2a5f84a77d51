#pragma once
// Which execution backends this build has and whether this machine can run them. The CLI prints it
// (`unity --version`), the GUI shows it (About box, run view) and `unity run` refuses a backend
// that is not available, quoting `detail`.
#include <string>
#include <vector>

namespace unity::executor {

struct BackendInfo {
  std::string name;  // "cpu" or "cuda": the values of `unity run --backend`
  bool available = false;
  std::string detail;  // library versions when available, the reason otherwise
};

// Always lists "cpu" (available) first, then "cuda". Never throws: a broken driver or a missing GPU
// is reported in the cuda entry's detail.
std::vector<BackendInfo> available_backends();

}  // namespace unity::executor
