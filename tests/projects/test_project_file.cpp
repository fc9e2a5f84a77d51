// The file as a whole: create, open in each access mode, refusing files that are not usable
// projects without touching them, and forward migrations of older schema versions.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "connection_setup.h"
#include "project_test_util.h"
#include "schema.h"
#include "unity/core/errors.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/projects/project.h"

using namespace unity;
using namespace unity::projects;
using namespace unity::projects::testing;

namespace {

constexpr Access kAllAccess[] = {Access::ReadWrite, Access::ReadOnly, Access::Snapshot};

void raw_exec(const fs::path& file, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

std::string open_error(const fs::path& file, Access access) {
  try {
    Project::open(file, access);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(opened without an error)";
}

// Opening `file` in every access mode fails with `expected` in the message, and leaves the file
// byte-for-byte as it was with nothing created beside it.
void expect_refused_untouched(const fs::path& file, const std::string& expected) {
  const std::string before = read_bytes(file);
  const auto time_before = fs::last_write_time(file);
  for (const Access access : kAllAccess) {
    const std::string message = open_error(file, access);
    EXPECT_NE(message.find(expected), std::string::npos)
        << "access " << static_cast<int>(access) << ": " << message;
    EXPECT_NE(message.find(file.string()), std::string::npos) << message;  // names the file
    EXPECT_EQ(read_bytes(file), before);
    EXPECT_EQ(fs::last_write_time(file), time_before);
    EXPECT_EQ(sidecars(file), "");
  }
  // open_or_create does not overwrite it either.
  EXPECT_THROW(Project::open_or_create(file), InputError);
  EXPECT_EQ(read_bytes(file), before);
  EXPECT_EQ(sidecars(file), "");
}

}  // namespace

TEST(ProjectFile, CreateMakesAnEmptyProjectOfTheLatestVersion) {
  TempDir dir;
  const auto file = dir / "new.unity";
  {
    auto project = Project::create(file);
    EXPECT_EQ(project.schema_version(), Project::latest_schema_version());
    EXPECT_EQ(Project::latest_schema_version(), 3);
    const auto c = project.counts();
    EXPECT_EQ(c.models + c.machines + c.searches + c.plans + c.runs + c.op_profiles, 0);
  }
  // No temporary files are left beside it, and a closed project has no -wal/-shm.
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir.path()))
    names.push_back(entry.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"new.unity"});
  // The header says WAL (bytes 18/19 = 2), application id "Unit", user_version 3.
  const std::string bytes = read_bytes(file);
  ASSERT_GE(bytes.size(), 100u);
  EXPECT_EQ(bytes.substr(0, 16), std::string("SQLite format 3\0", 16));
  EXPECT_EQ(bytes[18], 2);
  EXPECT_EQ(bytes[19], 2);
  EXPECT_EQ(bytes.substr(68, 4), "Unit");
  EXPECT_EQ(static_cast<int>(bytes[63]), 3);
  for (const Access access : kAllAccess) EXPECT_NO_THROW(Project::open(file, access));
  EXPECT_EQ(sidecars(file), "");
}

TEST(ProjectFile, CreateRefusesAnExistingFileWithoutTouchingIt) {
  TempDir dir;
  const auto file = dir / "taken.unity";
  write_bytes(file, "my thesis, do not overwrite\n");
  try {
    Project::create(file);
    FAIL() << "created over an existing file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("already exists"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_bytes(file), "my thesis, do not overwrite\n");
  EXPECT_EQ(sidecars(file), "");
  EXPECT_THROW(Project::create(dir / "no-such-folder" / "p.unity"), InputError);
}

TEST(ProjectFile, MissingFileAndFolderAreRefused) {
  TempDir dir;
  EXPECT_NE(open_error(dir / "missing.unity", Access::ReadWrite).find("no such project file"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "missing.unity"));
  EXPECT_NE(open_error(dir.path(), Access::Snapshot).find("is not a file"), std::string::npos);
}

TEST(ProjectFile, NotSqliteIsRefusedUntouched) {
  TempDir dir;
  const auto file = dir / "notes.unity";
  write_bytes(file, "These are my notes about the model.\nNot a database at all.\n");
  expect_refused_untouched(file, "not a SQLite database");

  const auto empty = dir / "empty.unity";
  write_bytes(empty, "");
  expect_refused_untouched(empty, "the file is empty");
}

TEST(ProjectFile, TruncatedProjectIsRefusedUntouched) {
  TempDir dir;
  const auto good = dir / "good.unity";
  {
    auto project = Project::create(good);
    project.add_model(zoo::build("resnext50", 64), "resnext50");  // many pages of model JSON
  }
  const std::string bytes = read_bytes(good);
  ASSERT_GT(bytes.size(), 16u * 4096u);

  const auto whole_pages = dir / "whole_pages.unity";  // cut at a page boundary
  write_bytes(whole_pages, bytes.substr(0, 8 * 4096));
  expect_refused_untouched(whole_pages, "truncated");

  const auto mid_page = dir / "mid_page.unity";
  write_bytes(mid_page, bytes.substr(0, 8 * 4096 + 1000));
  expect_refused_untouched(mid_page, "truncated");

  const auto header_only = dir / "header_only.unity";
  write_bytes(header_only, bytes.substr(0, 60));
  expect_refused_untouched(header_only, "shorter than the 100-byte SQLite header");
}

TEST(ProjectFile, DamagedPageInTheMiddleIsRefusedUntouched) {
  TempDir dir;
  const auto good = dir / "good.unity";
  {
    auto project = Project::create(good);
    project.add_model(zoo::build("resnext50", 64), "resnext50");  // many pages of model JSON
    project.add_model(zoo::build("bert-large", 8), "bert-large");
  }
  std::string bytes = read_bytes(good);
  const std::size_t page = 4096, pages = bytes.size() / page;
  ASSERT_GT(pages, 16u);
  // A b-tree page in the middle of the file loses its header: every page is still there (the
  // header check passes), but the tree does not hold together.
  const auto damaged = dir / "damaged.unity";
  const std::size_t middle = pages / 2 * page;
  for (std::size_t i = 0; i < 64; ++i) bytes[middle + i] = static_cast<char>(0xA5);
  write_bytes(damaged, bytes);
  expect_refused_untouched(damaged, "the project file is damaged");
  EXPECT_NE(open_error(damaged, Access::ReadWrite).find("quick_check"), std::string::npos);
  EXPECT_NO_THROW(Project::open(good, Access::Snapshot));  // the undamaged original opens
}

TEST(ProjectFile, NewerSchemaVersionIsRefusedUntouched) {
  TempDir dir;
  const auto file = dir / "future.unity";
  Project::create(file);
  raw_exec(file, "PRAGMA user_version = 99");  // as a future Unity would leave it
  ASSERT_EQ(sidecars(file), "");
  expect_refused_untouched(file,
                           "newer Unity (project schema version 99; this build reads "
                           "versions up to 3)");
}

TEST(ProjectFile, OtherApplicationsDatabasesAreRefusedUntouched) {
  TempDir dir;
  const auto plain = dir / "plain.sqlite";
  raw_exec(plain, "CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('Ada');");
  expect_refused_untouched(plain, "not a Unity project");

  const auto other = dir / "other.sqlite";
  raw_exec(other, "PRAGMA application_id = 1196444493; CREATE TABLE t (x);");  // "GPKG"
  expect_refused_untouched(other, "another application (application_id 0x47504b4d)");
}

TEST(ProjectFile, OlderVersionIsMigratedForwardKeepingItsRows) {
  TempDir dir;
  const auto file = dir / "v1.unity";
  {
    // A version-1 file as the first release wrote it: models, machines, searches, steps, plans.
    auto c = detail::open_writer(file, /*create=*/true);
    ASSERT_EQ(detail::migrate(*c, 1), 1);
    c->exec(R"sql(
INSERT INTO searches (id, devices, mode, status, started_at) VALUES (7, 6, 'joint', 'completed', 'then');
INSERT INTO search_steps (search_id, seq, kind, step, rule, matched_nodes, candidate_ms, best_ms,
                          elapsed_seconds, queue_size, candidates_evaluated, candidate_hash, status)
VALUES (7, 0, 'started', 0, NULL, NULL, 12.5, 12.5, 0.0, 1, 1, -2, NULL),
       (7, 1, 'candidate_costed', 0, 'fuse', '[3,4]', 11.0, 11.0, 0.5, 2, 2, 42, NULL);
)sql");
  }
  const std::string v1_bytes = read_bytes(file);
  EXPECT_EQ(static_cast<int>(v1_bytes[63]), 1);
  ASSERT_EQ(sidecars(file), "");

  // Readers do not migrate: they refuse, leaving the file as it is.
  for (const Access access : {Access::ReadOnly, Access::Snapshot}) {
    const std::string message = open_error(file, access);
    EXPECT_NE(message.find("schema version 1 and needs migrating to version 3"), std::string::npos)
        << message;
    EXPECT_EQ(read_bytes(file), v1_bytes);
    EXPECT_EQ(sidecars(file), "");
  }

  {
    auto project = Project::open(file, Access::ReadWrite);
    EXPECT_EQ(project.schema_version(), 3);
    const auto search = project.search(7);
    ASSERT_TRUE(search);
    EXPECT_EQ(search->status, "completed");
    EXPECT_EQ(search->steps, 2);
    const auto steps = project.load_search_steps(7);
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_EQ(steps[0].kind, SearchEvent::Kind::Started);
    EXPECT_EQ(steps[0].candidate_hash, ~std::uint64_t{1});  // -2 as 64 bits
    EXPECT_EQ(steps[1].rule, "fuse");
    EXPECT_EQ(steps[1].matched_nodes, (std::vector<NodeId>{3, 4}));
    EXPECT_TRUE(steps[1].matched_names.empty());  // a column version 3 added
    EXPECT_EQ(steps[1].segment, -1);
    // Version 2's tables are there and usable.
    project.put_op_profiles(
        {{"NVIDIA V100-SXM2-16GB", "Relu() float32[4] -> float32[4]", 1e-6, 2e-6, "test", ""}});
    EXPECT_EQ(project.op_profiles().size(), 1u);
  }
  EXPECT_EQ(static_cast<int>(read_bytes(file)[63]), 3);
  EXPECT_NO_THROW(Project::open(file, Access::Snapshot));
}

TEST(ProjectFile, MigrationsAreNumberedFromOneWithoutGaps) {
  const auto& steps = detail::migrations();
  ASSERT_FALSE(steps.empty());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].version, static_cast<int>(i) + 1);
    EXPECT_FALSE(steps[i].summary.empty());
  }
  EXPECT_EQ(detail::latest_schema_version(), steps.back().version);
}

TEST(ProjectFile, ReadOnlyProjectRefusesWrites) {
  TempDir dir;
  const auto file = dir / "p.unity";
  Project::create(file);
  for (const Access access : {Access::ReadOnly, Access::Snapshot}) {
    auto project = Project::open(file, access);
    EXPECT_TRUE(project.read_only());
    EXPECT_THROW(project.add_model(zoo::build("mnist-mlp", 64), "mnist-mlp"), InputError);
    EXPECT_THROW(project.put_op_profiles({}), InputError);
  }
  EXPECT_EQ(Project::open(file).counts().models, 0);
}
