#pragma once
// A stable hash of content that is stored and compared later: a project's machine and model keys,
// the kept verdicts of rule files, the fuzz stage's record of the inputs it ran. The same value on
// every machine, build and run (std::hash and absl::Hash may differ between builds, absl::Hash even
// between runs). Not for adversarial input.
#include <cstdint>
#include <string>
#include <string_view>

namespace unity {

inline constexpr std::uint64_t kFnv1a64Offset = 14695981039346656037ULL;

// FNV-1a over the bytes, continuing from `state` (the offset basis for a fresh hash), so that a
// sequence of pieces hashes piece by piece.
constexpr std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t state = kFnv1a64Offset) {
  for (const char c : bytes) {
    state ^= static_cast<unsigned char>(c);
    state *= 1099511628211ULL;
  }
  return state;
}

// 16 lower-case hex digits.
std::string hex64(std::uint64_t value);

}  // namespace unity
