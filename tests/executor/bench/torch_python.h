#pragma once
// The Python interpreter that has PyTorch, for the benchmarks that time PyTorch beside Unity.
#include <cstdlib>
#include <string>

// Debian's python3-torch is for /usr/bin/python3; a pyenv python3 earlier on PATH lacks it.
// "" when none has torch.
inline std::string python_with_torch() {
  for (const char* p : {"/usr/bin/python3", "python3"}) {
    const std::string cmd = std::string(p) + " -c 'import torch' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return p;
  }
  return "";
}
