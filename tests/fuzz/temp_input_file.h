#pragma once
// The ONNX importer and the project store read files, not memory: each fuzz input is written to one
// file per process (so parallel fuzzing jobs do not share it) and read back from there.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace unity::fuzz {

class TempInputFile {
 public:
  explicit TempInputFile(const std::string& suffix)
      : path_(std::filesystem::temp_directory_path() /
              ("unity-fuzz-" + std::to_string(::getpid()) + suffix)) {}
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
  std::filesystem::path path_;
};

}  // namespace unity::fuzz
