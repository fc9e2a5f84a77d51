#pragma once
// What every fuzzer checks: input the user gives us ends in one of the documented user-facing
// errors (core/include/unity/core/errors.h: InputError and its ShapeError and GraphError), which
// the CLI turns into exit 1 and a message. Anything else is a finding: a crash or sanitizer report
// aborts by itself, and any other exception (the CLI's "internal error", exit 2) is left to escape
// the fuzz target, where libFuzzer reports it as a crash and keeps the input.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "unity/core/errors.h"

namespace unity::fuzz {

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

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
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
