#include "onnx/const_tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "unity/core/errors.h"

namespace unity::onnxio {

bool is_integer_elem_type(int elem_type) {
  switch (elem_type) {
    case 2:   // UINT8
    case 3:   // INT8
    case 4:   // UINT16
    case 5:   // INT16
    case 6:   // INT32
    case 7:   // INT64
    case 9:   // BOOL
    case 12:  // UINT32
    case 13:  // UINT64
      return true;
    default:
      return false;
  }
}

std::int64_t product(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  // Dims come from the file: a product past int64 is a malformed model, not undefined behaviour.
  for (std::int64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n))
      throw InputError(fmt::format("a tensor of shape {} has more elements than Unity can count",
                                   format_dims(dims)));
  return n;
}

std::string format_dims(const std::vector<std::int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

bool ConstTensor::is_integer() const { return is_integer_elem_type(elem_type); }

std::int64_t ConstTensor::numel() const { return product(dims); }

double ConstTensor::as_double(std::int64_t index) const {
  return is_integer() ? static_cast<double>(ints.at(static_cast<std::size_t>(index)))
                      : floats.at(static_cast<std::size_t>(index));
}

std::int64_t ConstTensor::as_int(std::int64_t index) const {
  return is_integer() ? ints.at(static_cast<std::size_t>(index))
                      : static_cast<std::int64_t>(floats.at(static_cast<std::size_t>(index)));
}

std::vector<std::int64_t> ConstTensor::to_ints() const {
  if (is_integer()) return ints;
  std::vector<std::int64_t> out;
  out.reserve(floats.size());
  for (double v : floats) out.push_back(static_cast<std::int64_t>(v));
  return out;
}

double ConstTensor::scalar() const {
  if (numel() != 1) {
    throw InputError(
        fmt::format("expected a scalar constant, got a tensor of shape {}", format_dims(dims)));
  }
  return as_double(0);
}

ConstTensor ConstTensor::from_ints(std::vector<std::int64_t> values, std::vector<std::int64_t> dims,
                                   int elem_type) {
  ConstTensor t;
  t.dims = std::move(dims);
  t.elem_type = elem_type;
  t.ints = std::move(values);
  return t;
}

ConstTensor ConstTensor::from_doubles(std::vector<double> values, std::vector<std::int64_t> dims,
                                      int elem_type) {
  ConstTensor t;
  t.dims = std::move(dims);
  t.elem_type = elem_type;
  t.floats = std::move(values);
  return t;
}

}  // namespace unity::onnxio
