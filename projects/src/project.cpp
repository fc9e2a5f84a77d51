// Opening, creating and counting: the parts of Project that deal with the file as a whole.
#include "unity/projects/project.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include <fmt/format.h>

#include "connection_setup.h"
#include "file_check.h"
#include "process_owner.h"
#include "schema.h"
#include "search_store.h"
#include "sqlite_db.h"
#include "unity/core/errors.h"

namespace unity::projects {
namespace fs = std::filesystem;
using detail::Connection;

namespace {

// PRAGMA quick_check: a file whose pages are damaged (a disk error, a copy cut short inside, a
// byte flipped) is refused before anything reads its content or writes to it.
void check_pages(Connection& c) {
  std::vector<std::string> problems;
  try {
    detail::Statement s(c, "PRAGMA quick_check(3)");
    while (s.step()) problems.push_back(s.column_text(0));
  } catch (const std::exception& e) {
    problems = {e.what()};  // SQLite can fail on the damaged page itself
  }
  if (problems.size() == 1 && problems[0] == "ok") return;
  // One line: SQLite's report spans lines and starts with the database's name.
  std::string report;
  for (const auto& problem : problems) {
    std::string line;
    for (char ch : problem) line += ch == '\n' ? ';' : ch;
    const std::string prefix = "*** in database main ***;";
    if (line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
    report += (report.empty() ? "" : "; ") + line;
  }
  throw InputError(fmt::format(
      "'{}': the project file is damaged (SQLite's quick_check: {}); it was left as it is: "
      "restore it from a copy",
      c.file().string(), report));
}

// The checks the file header cannot make: SQLite reads the schema version and application id from
// the write-ahead log as well, where a newer Unity still running may have put them.
void check_identity(Connection& c, Access access) {
  const auto application_id = c.query_int("PRAGMA application_id");
  if (application_id != detail::kApplicationId)
    throw InputError(fmt::format(
        "'{}': is a SQLite database but not a Unity project (application_id 0x{:08x}); create a "
        "project with 'unity project new'",
        c.file().string(), static_cast<std::uint32_t>(application_id)));
  const auto version = c.query_int("PRAGMA user_version");
  if (version > detail::latest_schema_version())
    detail::throw_newer_schema(c.file(), version, detail::latest_schema_version());
  if (access != Access::ReadWrite && version < detail::latest_schema_version())
    throw InputError(fmt::format(
        "'{}': the project has schema version {} and needs migrating to version {} before it can "
        "be read; open it for writing once ('unity project upgrade {}')",
        c.file().string(), version, detail::latest_schema_version(), c.file().string()));
}

void remove_with_sidecars(const fs::path& file) {
  std::error_code ignored;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    fs::remove(file.string() + suffix, ignored);
}

// Publishes a finished file under its final name without replacing anything there: a hard link
// fails when the name exists. File systems without hard links fall back to a checked rename.
void publish_new_file(const fs::path& from, const fs::path& to) {
  if (::link(from.c_str(), to.c_str()) == 0) {
    fs::remove(from);
    return;
  }
  const int error = errno;
  if (error == EEXIST)
    throw InputError(
        fmt::format("'{}': already exists; open it instead of creating it", to.string()));
  std::error_code ec;
  if (fs::exists(to, ec))
    throw InputError(
        fmt::format("'{}': already exists; open it instead of creating it", to.string()));
  fs::rename(from, to, ec);
  if (ec)
    throw InputError(
        fmt::format("'{}': cannot create the project file ({}; linking failed with {})",
                    to.string(), ec.message(), std::strerror(error)));
}

}  // namespace

Project::Project(fs::path file, Access access, std::unique_ptr<Connection> connection,
                 int schema_version)
    : file_(std::move(file)),
      access_(access),
      connection_(std::move(connection)),
      schema_version_(schema_version) {}

Project::Project(Project&&) noexcept = default;
Project& Project::operator=(Project&&) noexcept = default;
Project::~Project() = default;

int Project::latest_schema_version() { return detail::latest_schema_version(); }

Project Project::create(const fs::path& file) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(file, ec)))
    throw InputError(
        fmt::format("'{}': already exists; open it instead of creating it", file.string()));
  const fs::path parent = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec))
    throw InputError(fmt::format("'{}': no such directory '{}'", file.string(), parent.string()));
  // Build the whole file under a temporary name, then publish it: a reader never sees a half-made
  // project, and a failure leaves nothing behind.
  const fs::path temporary =
      parent / fmt::format(".{}.creating-{}", file.filename().string(), ::getpid());
  remove_with_sidecars(temporary);
  try {
    {
      auto connection = detail::open_writer(temporary, /*create=*/true);
      detail::migrate(*connection);
    }  // closing the last connection checkpoints the log into the file and deletes it
    publish_new_file(temporary, file);
  } catch (...) {
    remove_with_sidecars(temporary);
    throw;
  }
  return open(file, Access::ReadWrite);
}

Project Project::open(const fs::path& file, Access access) {
  const auto header = detail::inspect_project_file(file, latest_schema_version());
  if (header.application_id != detail::kApplicationId)
    throw InputError(fmt::format(
        "'{}': is a SQLite database but not a Unity project (no Unity application id); create a "
        "project with 'unity project new'",
        file.string()));
  if (access != Access::ReadWrite &&
      header.user_version < static_cast<std::uint32_t>(latest_schema_version())) {
    // Decide before SQLite opens it: a refused file gets no -wal/-shm files.
    std::error_code ec;
    if (!fs::exists(file.string() + "-wal", ec))
      throw InputError(fmt::format(
          "'{}': the project has schema version {} and needs migrating to version {} before it "
          "can be read; open it for writing once ('unity project upgrade {}')",
          file.string(), header.user_version, latest_schema_version(), file.string()));
  }

  // Without a log beside it nobody has the file open: check its pages as they are, creating
  // nothing. With one, the connection below checks them before any migration writes.
  bool checked = false;
  if (auto snapshot = detail::open_idle_snapshot(file)) {
    check_pages(*snapshot);
    checked = true;
  }
  std::unique_ptr<Connection> connection;
  switch (access) {
    case Access::ReadWrite:
      connection = detail::open_writer(file);
      break;
    case Access::ReadOnly:
      connection = detail::open_reader(file);
      break;
    case Access::Snapshot:
      connection = detail::open_idle_snapshot(file);
      if (!connection) connection = detail::open_reader(file);
      break;
  }
  check_identity(*connection, access);
  if (!checked) check_pages(*connection);
  int version = static_cast<int>(connection->query_int("PRAGMA user_version"));
  if (access == Access::ReadWrite) version = detail::migrate(*connection);
  Project project(file, access, std::move(connection), version);
  if (access == Access::ReadWrite) project.mark_dead_owners_interrupted();
  return project;
}

Project Project::open_or_create(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(file, ec))) {
    try {
      return create(file);
    } catch (const InputError&) {
      // Another process created it between our check and our link: open theirs.
      if (!fs::exists(file, ec)) throw;
    }
  }
  return open(file, Access::ReadWrite);
}

void Project::require_writable(const char* what) const {
  if (access_ != Access::ReadWrite)
    throw InputError(
        fmt::format("'{}': cannot {}: the project is open read-only", file_.string(), what));
}

void Project::mark_dead_owners_interrupted() {
  detail::mark_dead_owners(*connection_, "searches");
  detail::mark_dead_owners(*connection_, "runs");
}

ProjectCounts Project::counts() const {
  auto& c = *connection_;
  ProjectCounts n;
  // One read transaction, so the counts agree with each other while a writer commits beside us.
  const detail::ReadTransaction snapshot(c);
  n.models = c.query_int("SELECT count(*) FROM models");
  n.machines = c.query_int("SELECT count(*) FROM machines");
  n.plans = c.query_int("SELECT count(*) FROM plans");
  n.runs = c.query_int("SELECT count(*) FROM runs");
  n.op_profiles = c.query_int("SELECT count(*) FROM op_profiles");
  n.pins_vetoes = c.query_int("SELECT count(*) FROM pins_vetoes");
  for (const auto& s : detail::query_search_statuses(c)) {
    ++n.searches;
    switch (status_from_string(s).value_or(Status::Failed)) {
      case Status::Running:
        ++n.running;
        break;
      case Status::Completed:
        ++n.completed;
        break;
      case Status::Cancelled:
        ++n.cancelled;
        break;
      case Status::Interrupted:
        ++n.interrupted;
        break;
      case Status::Failed:
        ++n.failed;
        break;
    }
  }
  return n;
}

}  // namespace unity::projects
