#pragma once
// A small dense tensor of doubles in row-major order: the data of one replica of a logical tensor when
// the rules library evaluates a PCG on concrete inputs (fingerprints, counterexamples, axiom checks).
// Sizes are tiny (tens to hundreds of elements), so clarity wins over speed.
#include <cstdint>
#include <vector>

namespace unity::rules {

struct DenseTensor {
  std::vector<std::int64_t> sizes;
  std::vector<double> data;

  DenseTensor() = default;
  explicit DenseTensor(std::vector<std::int64_t> s, double fill = 0.0);

  int rank() const { return static_cast<int>(sizes.size()); }
  std::int64_t numel() const { return static_cast<std::int64_t>(data.size()); }
  std::vector<std::int64_t> strides() const;
  // Row-major offset of a multi-index.
  std::int64_t offset(const std::vector<std::int64_t>& index) const;
  double& at(const std::vector<std::int64_t>& index) { return data[offset(index)]; }
  double at(const std::vector<std::int64_t>& index) const { return data[offset(index)]; }
};

// Calls f(index) for every multi-index of `sizes` in row-major order.
template <typename F>
void for_each_index(const std::vector<std::int64_t>& sizes, F&& f) {
  std::vector<std::int64_t> index(sizes.size(), 0);
  for (auto s : sizes)
    if (s <= 0) return;
  while (true) {
    f(index);
    int d = static_cast<int>(sizes.size()) - 1;
    while (d >= 0 && ++index[d] == sizes[d]) index[d--] = 0;
    if (d < 0) return;
  }
}

// [begin, end) along `dim`, every other dim whole.
DenseTensor slice(const DenseTensor& t, int dim, std::int64_t begin, std::int64_t end);
// Inputs concatenated along `dim` (equal sizes elsewhere).
DenseTensor concat(const std::vector<DenseTensor>& parts, int dim);
// Output dim i is input dim perm[i].
DenseTensor transpose(const DenseTensor& t, const std::vector<std::int64_t>& perm);
DenseTensor add(const DenseTensor& a, const DenseTensor& b);  // equal sizes

// Element-wise equality with a relative tolerance (rounding differs with the order of a sum); NaN
// equals NaN so that two ways of computing an undefined value agree.
bool approx_equal(const DenseTensor& a, const DenseTensor& b, double tolerance = 1e-9);

}  // namespace unity::rules
