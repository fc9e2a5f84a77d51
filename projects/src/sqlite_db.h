#pragma once
// A thin RAII layer over the SQLite C API for the project file: one Connection per thread, prepared
// Statements, and write Transactions that roll back unless committed. Private to libunity_projects.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace unity::projects::detail {

// SQLite error codes that mean the user's file is not a usable database (SQLITE_CORRUPT,
// SQLITE_NOTADB) become InputError naming `file`; everything else is a std::runtime_error.
[[noreturn]] void throw_sqlite_error(sqlite3* db, int rc, std::string_view what,
                                     const std::filesystem::path& file);

class Connection {
 public:
  // `uri` is a SQLite URI ("file:...?mode=ro&immutable=1") or a plain path; `flags` SQLITE_OPEN_*.
  Connection(const std::filesystem::path& file, const std::string& uri, int flags);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* get() const { return db_; }
  const std::filesystem::path& file() const { return file_; }
  // Runs one or more statements that return no rows.
  void exec(std::string_view sql);
  // The first column of the first row of a query that returns one integer (PRAGMAs, counts).
  std::int64_t query_int(std::string_view sql);
  std::int64_t last_insert_rowid() const;
  [[noreturn]] void fail(int rc, std::string_view what) const;

 private:
  sqlite3* db_ = nullptr;
  std::filesystem::path file_;
};

class Statement {
 public:
  Statement(Connection& connection, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are 1-based, as in SQLite.
  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);  // copied (SQLITE_TRANSIENT)
  Statement& bind(int index, const std::string& value) {
    return bind(index, std::string_view(value));
  }
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind_null(int index);
  template <typename T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  // Advances to the next row: true while there is one.
  bool step();
  // Steps a statement that returns no rows, then resets it for the next use.
  void run();
  void reset();  // also clears the bindings

  bool is_null(int column) const;
  std::int64_t column_int(int column) const;
  double column_double(int column) const;
  std::string column_text(int column) const;
  std::optional<std::int64_t> column_optional_int(int column) const;
  std::optional<double> column_optional_double(int column) const;

 private:
  Connection& connection_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE: takes the write lock up front, so a busy database makes the transaction wait
// (busy_timeout) at its start instead of failing halfway through.
class Transaction {
 public:
  explicit Transaction(Connection& connection);
  ~Transaction();  // rolls back unless committed
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Connection& connection_;
  bool open_ = true;
};

// BEGIN (deferred): several reads that see one snapshot of the file while a writer commits beside
// them (WAL readers never wait for the writer). Ends when destroyed.
class ReadTransaction {
 public:
  explicit ReadTransaction(Connection& connection);
  ~ReadTransaction();
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;

 private:
  Connection& connection_;
};

}  // namespace unity::projects::detail
