#include "pipeline_chunks.h"

#include <algorithm>
#include <numeric>

namespace unity::pipeline_layouts {

std::vector<int> chunk_layer_ends(int layers, int count) {
  const int per = (layers + count - 1) / count;
  std::vector<int> sizes(static_cast<std::size_t>(count), per);
  int fewer = per * count - layers;
  for (int i = 0; fewer > 0 && i < count; ++i, --fewer)
    sizes[static_cast<std::size_t>(i % 2 == 0 ? i / 2 : count - 1 - i / 2)] -= 1;
  std::vector<int> ends;
  int end = 0;
  for (int s : sizes) ends.push_back(end += s);
  return ends;
}

std::vector<std::pair<int, int>> layer_count_chunks(const std::vector<int>& layer_of, int layers,
                                                    int count) {
  const int n = static_cast<int>(layer_of.size());
  const std::vector<int> ends = chunk_layer_ends(layers, count);
  std::vector<std::pair<int, int>> out;
  int first = 0;
  for (int c = 0; c < count; ++c) {
    int last = first;
    // Every later chunk keeps a segment (a model with fewer layers than segments per chunk,
    // one whose layers were all counted before its first block).
    const int most = c + 1 == count ? n - 1 : std::max(first, n - (count - c));
    while (last + 1 <= most && (c + 1 == count || layer_of[last + 1] < ends[c])) ++last;
    if (c + 1 == count) last = n - 1;
    out.emplace_back(first, last);
    first = last + 1;
  }
  return out;
}

std::vector<std::pair<int, int>> balanced_chunks(const std::vector<double>& t, int count) {
  const int n = static_cast<int>(t.size());
  auto split = [&](double limit) {
    std::vector<std::pair<int, int>> parts;
    int first = 0;
    double sum = 0;
    for (int j = 0; j < n; ++j) {
      if (j > first && sum + t[j] > limit) {
        parts.emplace_back(first, j - 1);
        first = j;
        sum = 0;
      }
      sum += t[j];
    }
    parts.emplace_back(first, n - 1);
    return parts;
  };
  double lo = *std::max_element(t.begin(), t.end());
  double hi = std::accumulate(t.begin(), t.end(), 0.0);
  for (int i = 0; i < 50 && hi - lo > 1e-9 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (static_cast<int>(split(mid).size()) <= count ? hi : lo) = mid;
  }
  std::vector<std::pair<int, int>> out = split(hi);
  // Fewer chunks than asked: split the longest ones (every chunk needs a segment).
  while (static_cast<int>(out.size()) < count) {
    auto it = std::max_element(out.begin(), out.end(), [](auto a, auto b) {
      return a.second - a.first < b.second - b.first;
    });
    if (it->second == it->first) break;
    const int mid = (it->first + it->second) / 2;
    const auto right = std::make_pair(mid + 1, it->second);
    it->second = mid;
    out.insert(it + 1, right);
  }
  return out;
}

}  // namespace unity::pipeline_layouts
