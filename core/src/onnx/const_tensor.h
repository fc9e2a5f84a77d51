#pragma once
// A tensor whose values the importer knows: an initializer it had to read, a Constant node, or the
// result of folding shape arithmetic. Integer and boolean tensors keep exact int64 values (Slice
// ends are often INT64_MAX, which a double would round); floating tensors keep doubles.
#include <cstdint>
#include <string>
#include <vector>

namespace unity::onnxio {

struct ConstTensor {
  std::vector<std::int64_t> dims;
  int elem_type = 1;               // an onnx::TensorProto_DataType value
  std::vector<double> floats;      // when !is_integer()
  std::vector<std::int64_t> ints;  // when is_integer()

  bool is_integer() const;
  std::int64_t numel() const;
  double as_double(std::int64_t index) const;
  std::int64_t as_int(std::int64_t index) const;
  std::vector<std::int64_t> to_ints() const;  // every value, converted
  double scalar() const;                      // the only value; throws InputError when numel != 1

  static ConstTensor from_ints(std::vector<std::int64_t> values, std::vector<std::int64_t> dims,
                               int elem_type = 7 /* INT64 */);
  static ConstTensor from_doubles(std::vector<double> values, std::vector<std::int64_t> dims,
                                  int elem_type = 1 /* FLOAT */);
};

bool is_integer_elem_type(int elem_type);
std::int64_t product(const std::vector<std::int64_t>& dims);
std::string format_dims(const std::vector<std::int64_t>& dims);  // "[2, 3]"

}  // namespace unity::onnxio
