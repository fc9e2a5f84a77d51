#pragma once
// How the library opens SQLite connections to a project file that has already passed the header
// checks (file_check.h): the pragmas every writer and reader sets.
#include <filesystem>
#include <memory>

#include "sqlite_db.h"

namespace unity::projects::detail {

// Long enough for another process's batch of search steps or a migration to commit; short enough
// that a wedged writer shows up as an error rather than a hang.
inline constexpr int kBusyTimeoutMs = 10000;

// "file:" URI for a path (percent-encoding what a URI reserves) with optional query parameters.
std::string file_uri(const std::filesystem::path& file, const std::string& query = "");

// WAL, foreign keys on, synchronous NORMAL (durable at checkpoints, atomic always), busy timeout.
// `create`: make the file if it does not exist.
std::unique_ptr<Connection> open_writer(const std::filesystem::path& file, bool create = false);
// A connection that reads and sees other connections' commits but writes nothing (PRAGMA
// query_only). SQLite creates -wal/-shm while it is open, and removes them when the last
// connection closes.
std::unique_ptr<Connection> open_reader(const std::filesystem::path& file);
// Reads the file as it is, without locks or -wal/-shm files: only valid while no other connection
// has the file open, which the absence of a -wal file shows. Returns null when a -wal file exists.
std::unique_ptr<Connection> open_idle_snapshot(const std::filesystem::path& file);

}  // namespace unity::projects::detail
