#include "connection_setup.h"

#include <sqlite3.h>

#include <cctype>

#include <fmt/format.h>

namespace unity::projects::detail {

std::string file_uri(const std::filesystem::path& file, const std::string& query) {
  std::string uri = "file:";
  for (const unsigned char c : file.string()) {
    const bool plain = std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~';
    uri += plain ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  if (!query.empty()) uri += "?" + query;
  return uri;
}

std::unique_ptr<Connection> open_writer(const std::filesystem::path& file, bool create) {
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  auto c = std::make_unique<Connection>(file, file_uri(file), flags);
  sqlite3_busy_timeout(c->get(), kBusyTimeoutMs);
  c->exec("PRAGMA journal_mode = WAL");
  c->exec("PRAGMA foreign_keys = ON");
  c->exec("PRAGMA synchronous = NORMAL");
  return c;
}

std::unique_ptr<Connection> open_reader(const std::filesystem::path& file) {
  // A read-write handle that refuses every write (query_only): as the last connection to close it
  // may still checkpoint and delete the -wal/-shm files, which a SQLITE_OPEN_READONLY handle would
  // leave behind. A file the user may not write opens truly read-only (SQLite falls back itself).
  auto c = std::make_unique<Connection>(file, file_uri(file), SQLITE_OPEN_READWRITE);
  sqlite3_busy_timeout(c->get(), kBusyTimeoutMs);
  c->exec("PRAGMA query_only = ON");
  return c;
}

std::unique_ptr<Connection> open_idle_snapshot(const std::filesystem::path& file) {
  std::error_code ec;
  if (std::filesystem::exists(file.string() + "-wal", ec)) return nullptr;
  return std::make_unique<Connection>(file, file_uri(file, "mode=ro&immutable=1"),
                                      SQLITE_OPEN_READONLY);
}

}  // namespace unity::projects::detail
