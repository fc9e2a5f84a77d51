#include "file_check.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity::projects::detail {
namespace {

// SQLite file format, section 1.3 of https://www.sqlite.org/fileformat.html.
constexpr std::size_t kHeaderBytes = 100;
constexpr char kMagic[] = "SQLite format 3";  // followed by a NUL: 16 bytes

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

}  // namespace

void throw_newer_schema(const std::filesystem::path& file, std::int64_t version, int newest_known) {
  throw InputError(fmt::format(
      "'{}': the project was written by a newer Unity (project schema version {}; this build reads "
      "versions up to {}); open it with that version",
      file.string(), version, newest_known));
}

FileHeader inspect_project_file(const std::filesystem::path& file, int newest_known) {
  std::error_code ec;
  const auto status = std::filesystem::status(file, ec);
  if (ec || !std::filesystem::exists(status))
    throw InputError(fmt::format("'{}': no such project file", file.string()));
  if (!std::filesystem::is_regular_file(status))
    throw InputError(fmt::format("'{}': is not a file", file.string()));
  const auto size = std::filesystem::file_size(file, ec);
  if (ec) throw InputError(fmt::format("'{}': cannot read the file size", file.string()));
  if (size == 0)
    throw InputError(fmt::format("'{}': the file is empty, not a Unity project", file.string()));

  std::array<unsigned char, kHeaderBytes> header{};
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(fmt::format("'{}': cannot read the file", file.string()));
  in.read(reinterpret_cast<char*>(header.data()), header.size());
  const auto got = static_cast<std::size_t>(in.gcount());

  const std::size_t magic_bytes = sizeof(kMagic);  // with its NUL
  const std::size_t compared = std::min(got, magic_bytes);
  if (std::memcmp(header.data(), kMagic, compared) != 0)
    throw InputError(fmt::format(
        "'{}': is not a Unity project (not a SQLite database); create one with 'unity project new'",
        file.string()));
  if (got < kHeaderBytes)
    throw InputError(fmt::format(
        "'{}': the project file is truncated ({} bytes, shorter than the 100-byte SQLite header)",
        file.string(), size));

  FileHeader h;
  const std::uint32_t raw_page = (std::uint32_t{header[16]} << 8) | header[17];
  h.page_size = raw_page == 1 ? 65536 : raw_page;
  if (h.page_size < 512 || (h.page_size & (h.page_size - 1)) != 0)
    throw InputError(fmt::format("'{}': the project file is damaged (page size {} in its header)",
                                 file.string(), raw_page));
  h.wal = header[18] == 2 && header[19] == 2;
  h.user_version = be32(&header[60]);
  h.application_id = be32(&header[68]);

  // The in-header page count is valid only when the change counter (24) equals the
  // version-valid-for number (92); every SQLite since 3.7.0 keeps them equal. While a write-ahead
  // log holds frames, a checkpoint may be copying them into the file (page 1 first, so the header
  // can run ahead of the file's size for a moment), and after a crash the log still holds the pages
  // the file lacks: only a file without a log must be as long as its header says.
  const std::uint32_t pages = be32(&header[28]);
  const auto wal_bytes = std::filesystem::file_size(file.string() + "-wal", ec);
  const bool has_log = !ec && wal_bytes > 0;
  if (!has_log && pages != 0 && be32(&header[24]) == be32(&header[92])) {
    const std::uintmax_t expected = std::uintmax_t{pages} * h.page_size;
    if (size < expected)
      throw InputError(
          fmt::format("'{}': the project file is truncated ({} bytes; its header says {} pages of "
                      "{} bytes = {} "
                      "bytes)",
                      file.string(), size, pages, h.page_size, expected));
  }
  if (size % h.page_size != 0)
    throw InputError(fmt::format(
        "'{}': the project file is truncated ({} bytes is not a whole number of {}-byte pages)",
        file.string(), size, h.page_size));

  if (h.application_id != 0 && h.application_id != kApplicationId)
    throw InputError(fmt::format(
        "'{}': is a SQLite database of another application (application_id 0x{:08x}), not a Unity "
        "project",
        file.string(), h.application_id));
  if (h.application_id == kApplicationId &&
      h.user_version > static_cast<std::uint32_t>(newest_known))
    throw_newer_schema(file, h.user_version, newest_known);
  return h;
}

}  // namespace unity::projects::detail
