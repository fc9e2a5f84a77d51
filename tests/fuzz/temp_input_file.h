#pragma once
// The ONNX importer and the project store read files, not memory: each fuzz input is written to one
// file per process (so parallel fuzzing jobs do not share it) and read back from there. The file's
// name has the same length in every process (the process id in 10 digits): the path reaches error
// messages, and a path of another length can take other branches in building them, so that the
// same seed would run other inputs.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace unity::fuzz {

class TempInputFile {
 public:
  explicit TempInputFile(const std::string& suffix)
      : path_(std::filesystem::temp_directory_path() / name(suffix)) {}
  ~TempInputFile() { remove_all(); }
  TempInputFile(const TempInputFile&) = delete;
  TempInputFile& operator=(const TempInputFile&) = delete;

  // Replaces the file's bytes with the input, removing what an earlier run left beside it.
  const std::filesystem::path& write(const std::uint8_t* data, std::size_t size) {
    remove_all();
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    return path_;
  }

  // The file and the SQLite companions (-wal, -shm, -journal) a project open may create.
  void remove_all() const {
    std::error_code ec;
    for (const char* extra : {"", "-wal", "-shm", "-journal"})
      std::filesystem::remove(path_.string() + extra, ec);
  }

 private:
  static std::string name(const std::string& suffix) {
    char digits[16];
    std::snprintf(digits, sizeof digits, "%010d", static_cast<int>(::getpid()));
    return "unity-fuzz-" + std::string(digits) + suffix;
  }

  std::filesystem::path path_;
};

}  // namespace unity::fuzz
