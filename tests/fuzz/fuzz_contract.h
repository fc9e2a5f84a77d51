#pragma once
// What every fuzzer checks: input the user gives us ends in one of the documented user-facing
// errors (core/include/unity/core/errors.h: InputError and its ShapeError and GraphError), which
// the CLI turns into exit 1 and a message. Anything else is a finding: a crash or sanitizer report
// aborts by itself, and any other exception (the CLI's "internal error", exit 2) is left to escape
// the fuzz target, where libFuzzer reports it as a crash and keeps the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "unity/core/content_hash.h"
#include "unity/core/errors.h"

namespace unity::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Every input the process ran, counted and hashed in order, printed when it exits ("fuzz inputs:
// N, digest D"): scripts/fuzz.sh --ci shows the line, so that two runs of the fuzz stage can be
// compared input for input. Each fuzz target records its input first. UNITY_FUZZ_TRACE=FILE also
// writes one line per input (its number, size and hash), to find the first input two runs differ
// in.
inline void record_input(const std::uint8_t* data, std::size_t size) {
  struct Record {
    unsigned long long count = 0;
    std::uint64_t digest = kFnv1a64Offset;
    std::FILE* trace = nullptr;
    Record() {
      if (const char* path = std::getenv("UNITY_FUZZ_TRACE")) trace = std::fopen(path, "w");
    }
    ~Record() {
      if (count > 0)
        std::fprintf(stderr, "fuzz inputs: %llu, digest %s\n", count, hex64(digest).c_str());
      if (trace) std::fclose(trace);
    }
  };
  static Record record;
  const std::string_view input = as_text(data, size);
  if (record.trace)
    std::fprintf(record.trace, "%llu %zu %s\n", record.count, size, hex64(fnv1a64(input)).c_str());
  ++record.count;
  record.digest = fnv1a64(input, fnv1a64(std::to_string(size) + ":", record.digest));
}

// Runs `body` and accepts its ending in a user-facing error. Returns libFuzzer's "keep going" 0.
template <typename Body>
int expect_user_errors_only(Body&& body) {
  try {
    body();
  } catch (const InputError&) {
    // The documented outcome for bad input (exit 1).
  }
  return 0;
}

// The input as JSON, or nothing when it is not JSON. read_json_file (json_io.h), which every
// command's file loading goes through, turns any exception of the parser into an InputError, so the
// loaders behind it only ever see parsed documents (fuzz_model_json fuzzes read_json_file itself).
inline std::optional<nlohmann::json> parse_json(const std::uint8_t* data, std::size_t size) {
  try {
    return nlohmann::json::parse(as_text(data, size));
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace unity::fuzz
