#include "unity/core/shapes/parallel_tensor_shape.h"

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity {

ParallelTensorShape ParallelTensorShape::serial(const std::vector<std::int64_t>& sizes,
                                                DataType dtype) {
  ParallelTensorShape s;
  s.dtype = dtype;
  for (auto size : sizes) s.dims.push_back({size, 1});
  return s;
}

std::vector<std::int64_t> ParallelTensorShape::sizes() const {
  std::vector<std::int64_t> out;
  for (const auto& d : dims) out.push_back(d.size);
  return out;
}

std::vector<int> ParallelTensorShape::degrees() const {
  std::vector<int> out;
  for (const auto& d : dims) out.push_back(d.degree);
  return out;
}

std::int64_t ParallelTensorShape::num_elements() const {
  std::int64_t n = 1;
  for (const auto& d : dims) n *= d.size;
  return n;
}

std::int64_t ParallelTensorShape::piece_elements() const {
  std::int64_t n = 1;
  for (const auto& d : dims) n *= d.size / d.degree;
  return n;
}

std::int64_t ParallelTensorShape::num_pieces() const {
  std::int64_t n = replica;
  for (const auto& d : dims) n *= d.degree;
  return n;
}

bool ParallelTensorShape::is_serial() const {
  if (replica != 1) return false;
  for (const auto& d : dims)
    if (d.degree != 1) return false;
  return true;
}

int ParallelTensorShape::axis(int index) const {
  const int r = rank();
  const int a = index < 0 ? index + r : index;
  if (a < 0 || a >= r)
    throw ShapeError(fmt::format("axis {} is out of range for a tensor of rank {}", index, r));
  return a;
}

std::string ParallelTensorShape::to_string() const {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i].size);
    if (dims[i].degree != 1) s += "/" + std::to_string(dims[i].degree);
  }
  s += "]";
  if (replica != 1) s += " r" + std::to_string(replica);
  s += " ";
  s += unity::to_string(dtype);
  return s;
}

}  // namespace unity
