#pragma once
// Which piece of a Concat cut into `pieces` (its attribute) each input lies in: the output's axis
// in equal blocks, each a run of whole inputs. Shape inference refuses a cut that would split an
// input; the mapping's edge costs and the executor's requests send each input to its piece's tasks
// alone.
#include <cstdint>
#include <vector>

namespace unity {

// The piece of each input, given the inputs' sizes along the axis; -1 for an input that straddles
// two pieces. Every input is in piece 0 when `pieces` does not divide the total.
inline std::vector<int> concat_input_pieces(const std::vector<std::int64_t>& sizes,
                                            std::int64_t pieces) {
  std::int64_t total = 0;
  for (auto s : sizes) total += s;
  std::vector<int> piece(sizes.size(), 0);
  if (pieces <= 1 || total % pieces != 0) return piece;
  const std::int64_t block = total / pieces;
  std::int64_t start = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::int64_t end = start + sizes[i];
    piece[i] = start / block == (end - 1) / block ? static_cast<int>(start / block) : -1;
    start = end;
  }
  return piece;
}

}  // namespace unity
