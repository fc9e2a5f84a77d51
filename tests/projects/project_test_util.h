#pragma once
// Shared by the project tests: a fresh folder per test, file bytes, and the files SQLite may put
// beside a database.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace unity::projects::testing {

namespace fs = std::filesystem;

// A folder of its own under the system temp folder, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() / ("unity_projects_" + std::to_string(::getpid()) + "_" +
                                         info->test_suite_name() + "_" + info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  fs::path operator/(const std::string& name) const { return path_ / name; }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const fs::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// -wal, -shm or -journal beside `file`, if any exists.
inline std::string sidecars(const fs::path& file) {
  std::string found;
  for (const char* suffix : {"-wal", "-shm", "-journal"})
    if (fs::exists(file.string() + suffix)) found += file.string() + suffix + " ";
  return found;
}

}  // namespace unity::projects::testing
