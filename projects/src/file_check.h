#pragma once
// Checks a would-be project file from its raw bytes before SQLite touches it, so that a file we
// reject (not SQLite, truncated, another application's database, a newer schema) is never opened
// for writing, never migrated and never gets -wal/-shm files beside it.
#include <cstdint>
#include <filesystem>

namespace unity::projects::detail {

// "Unit" in ASCII: PRAGMA application_id of every Unity project (offset 68 of the SQLite header).
inline constexpr std::uint32_t kApplicationId = 0x556E6974;

struct FileHeader {
  std::uint32_t page_size = 0;
  std::uint32_t user_version = 0;    // offset 60: the project schema version
  std::uint32_t application_id = 0;  // offset 68
  bool wal = false;                  // file format version bytes 18/19 == 2
};

// Throws InputError naming the file when it is missing, not a regular file, empty, not SQLite,
// shorter than its header says (truncated), another application's database, or of a schema version
// newer than `newest_known`.
FileHeader inspect_project_file(const std::filesystem::path& file, int newest_known);

// The message for a schema version this build does not know (also used after SQLite reads the
// version from a write-ahead log the header check could not see).
[[noreturn]] void throw_newer_schema(const std::filesystem::path& file, std::int64_t version,
                                     int newest_known);

}  // namespace unity::projects::detail
