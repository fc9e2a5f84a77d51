#pragma once
// Files the ONNX import tests read (tests/data/onnx) and write (a scratch directory per process, so
// parallel ctest runs do not share files).
#include <filesystem>
#include <string>
#include <system_error>

#include <unistd.h>

namespace unity::onnx_test {

namespace fs = std::filesystem;

inline fs::path data(const std::string& name) {
  return fs::path(UNITY_TEST_DATA_DIR) / "onnx" / name;
}

inline fs::path scratch_dir(const std::string& prefix) {
  const fs::path dir = fs::temp_directory_path() / (prefix + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

// Removes a scratch file and, once empty, its directory.
inline void remove_scratch(const fs::path& file) {
  std::error_code ignored;
  fs::remove(file, ignored);
  fs::remove(file.parent_path(), ignored);  // fails harmlessly while other files remain
}

}  // namespace unity::onnx_test
