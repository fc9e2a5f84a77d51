#include "sqlite_db.h"

#include <sqlite3.h>

#include <stdexcept>

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity::projects::detail {

void throw_sqlite_error(sqlite3* db, int rc, std::string_view what,
                        const std::filesystem::path& file) {
  const std::string detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  const int primary = rc & 0xff;
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB)
    throw InputError(
        fmt::format("'{}': the project file is damaged ({}: {})", file.string(), what, detail));
  if (primary == SQLITE_CANTOPEN)
    throw InputError(fmt::format("'{}': cannot open the project file ({})", file.string(), detail));
  if (primary == SQLITE_READONLY)
    throw InputError(
        fmt::format("'{}': the project file is read-only ({}: {})", file.string(), what, detail));
  throw std::runtime_error(
      fmt::format("'{}': SQLite error while {}: {} (code {})", file.string(), what, detail, rc));
}

Connection::Connection(const std::filesystem::path& file, const std::string& uri, int flags)
    : file_(file) {
  const int rc = sqlite3_open_v2(uri.c_str(), &db_, flags | SQLITE_OPEN_URI, nullptr);
  if (rc != SQLITE_OK) {
    // sqlite3_open_v2 hands back a handle even on failure; read its message before closing it.
    const std::string detail = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw InputError(fmt::format("'{}': cannot open the project file ({})", file.string(), detail));
  }
  sqlite3_extended_result_codes(db_, 1);
}

Connection::~Connection() { sqlite3_close_v2(db_); }

void Connection::fail(int rc, std::string_view what) const {
  throw_sqlite_error(db_, rc, what, file_);
}

void Connection::exec(std::string_view sql) {
  const std::string text(sql);
  char* message = nullptr;
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    const std::string detail = message ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    const int primary = rc & 0xff;
    if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB)
      throw InputError(
          fmt::format("'{}': the project file is damaged ({})", file_.string(), detail));
    throw std::runtime_error(fmt::format("'{}': SQLite error: {} (code {}) in: {}", file_.string(),
                                         detail, rc, text.substr(0, 120)));
  }
}

std::int64_t Connection::query_int(std::string_view sql) {
  Statement s(*this, sql);
  if (!s.step()) return 0;
  return s.column_int(0);
}

std::int64_t Connection::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

Statement::Statement(Connection& connection, std::string_view sql) : connection_(connection) {
  const int rc = sqlite3_prepare_v2(connection_.get(), sql.data(), static_cast<int>(sql.size()),
                                    &stmt_, nullptr);
  if ((rc & 0xff) == SQLITE_ERROR) {
    // Our statements all prepare against the schema we write (the tests run each of them), so a
    // missing table or column is the file's: one whose schema was edited or damaged.
    throw InputError(fmt::format(
        "'{}': the project file is damaged (its tables are not the ones Unity writes: {})",
        connection_.file().string(), sqlite3_errmsg(connection_.get())));
  }
  if (rc != SQLITE_OK) connection_.fail(rc, fmt::format("preparing '{}'", sql.substr(0, 80)));
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int index, std::int64_t value) {
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) connection_.fail(rc, "binding a parameter");
  return *this;
}

Statement& Statement::bind(int index, double value) {
  const int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK) connection_.fail(rc, "binding a parameter");
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  const int rc =
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) connection_.fail(rc, "binding a parameter");
  return *this;
}

Statement& Statement::bind_null(int index) {
  const int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) connection_.fail(rc, "binding a parameter");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  const std::string sql = sqlite3_sql(stmt_) ? sqlite3_sql(stmt_) : "";
  sqlite3_reset(stmt_);
  connection_.fail(rc, fmt::format("running '{}'", sql.substr(0, 80)));
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

std::int64_t Statement::column_int(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::column_double(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::column_text(int column) const {
  const auto* text = sqlite3_column_text(stmt_, column);
  if (!text) return {};
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::optional<std::int64_t> Statement::column_optional_int(int column) const {
  if (is_null(column)) return std::nullopt;
  return column_int(column);
}

std::optional<double> Statement::column_optional_double(int column) const {
  if (is_null(column)) return std::nullopt;
  return column_double(column);
}

Transaction::Transaction(Connection& connection) : connection_(connection) {
  connection_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (!open_) return;
  // A failed ROLLBACK (the transaction was already rolled back by SQLite after an I/O error) leaves
  // nothing to undo, and a destructor must not throw.
  sqlite3_exec(connection_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  connection_.exec("COMMIT");
  open_ = false;
}

ReadTransaction::ReadTransaction(Connection& connection) : connection_(connection) {
  connection_.exec("BEGIN");
}

ReadTransaction::~ReadTransaction() {
  // A read transaction has nothing to commit; ending it releases the snapshot.
  sqlite3_exec(connection_.get(), "COMMIT", nullptr, nullptr, nullptr);
}

}  // namespace unity::projects::detail
