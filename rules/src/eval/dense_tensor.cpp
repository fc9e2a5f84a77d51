#include "unity/rules/dense_tensor.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace unity::rules {

DenseTensor::DenseTensor(std::vector<std::int64_t> s, double fill) : sizes(std::move(s)) {
  std::int64_t n = 1;
  for (auto x : sizes) n *= x;
  data.assign(static_cast<std::size_t>(n), fill);
}

std::vector<std::int64_t> DenseTensor::strides() const {
  std::vector<std::int64_t> st(sizes.size(), 1);
  for (int d = rank() - 2; d >= 0; --d) st[d] = st[d + 1] * sizes[d + 1];
  return st;
}

std::int64_t DenseTensor::offset(const std::vector<std::int64_t>& index) const {
  std::int64_t off = 0;
  for (std::size_t d = 0; d < sizes.size(); ++d) off = off * sizes[d] + index[d];
  return off;
}

DenseTensor slice(const DenseTensor& t, int dim, std::int64_t begin, std::int64_t end) {
  auto sizes = t.sizes;
  sizes[dim] = end - begin;
  DenseTensor out(sizes);
  std::int64_t i = 0;
  for_each_index(sizes, [&](std::vector<std::int64_t> idx) {
    idx[dim] += begin;
    out.data[i++] = t.at(idx);
  });
  return out;
}

DenseTensor concat(const std::vector<DenseTensor>& parts, int dim) {
  auto sizes = parts.front().sizes;
  sizes[dim] = 0;
  for (const auto& p : parts) sizes[dim] += p.sizes[dim];
  DenseTensor out(sizes);
  std::int64_t base = 0;
  for (const auto& p : parts) {
    std::int64_t i = 0;
    for_each_index(p.sizes, [&](std::vector<std::int64_t> idx) {
      const double v = p.data[i++];
      idx[dim] += base;
      out.at(idx) = v;
    });
    base += p.sizes[dim];
  }
  return out;
}

DenseTensor transpose(const DenseTensor& t, const std::vector<std::int64_t>& perm) {
  std::vector<std::int64_t> sizes;
  for (auto p : perm) sizes.push_back(t.sizes[p]);
  DenseTensor out(sizes);
  std::vector<std::int64_t> src(perm.size());
  std::int64_t i = 0;
  for_each_index(sizes, [&](const std::vector<std::int64_t>& idx) {
    for (std::size_t d = 0; d < perm.size(); ++d) src[perm[d]] = idx[d];
    out.data[i++] = t.at(src);
  });
  return out;
}

DenseTensor add(const DenseTensor& a, const DenseTensor& b) {
  DenseTensor out = a;
  for (std::size_t i = 0; i < out.data.size(); ++i) out.data[i] += b.data[i];
  return out;
}

bool approx_equal(const DenseTensor& a, const DenseTensor& b, double tolerance) {
  if (a.sizes != b.sizes) return false;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    const double x = a.data[i], y = b.data[i];
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) return false;
      continue;
    }
    if (std::isinf(x) || std::isinf(y)) {
      if (x != y) return false;
      continue;
    }
    if (std::abs(x - y) > tolerance * std::max({1.0, std::abs(x), std::abs(y)})) return false;
  }
  return true;
}

}  // namespace unity::rules
