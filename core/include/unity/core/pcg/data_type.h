#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace unity {

// Bool holds masks (comparisons, logic, Where's condition): one byte an element in memory and on
// the wire, as 0 or 1; the executor keeps every integer type, Bool among them, as int64, and wraps
// each result into its type's range (wrap_integer). The narrow integers are what models take as
// input (uint8 images, int8 and int16 data) and ONNX's arithmetic on them.
enum class DataType {
  Float32,
  Float16,
  BFloat16,
  Int32,
  Int64,
  Bool,
  Int8,
  UInt8,
  Int16,
  UInt16,
  UInt32,
  UInt64
};

std::int64_t size_of(DataType type);
std::string_view to_string(DataType type);
// Accepts our names ("float32", "int64", ...); throws InputError naming the unknown type.
DataType data_type_from_string(std::string_view name);
bool is_floating(DataType type);
// Every type's name, in the enum's order (Cast's `to`, Random's `dtype`).
std::vector<std::string_view> data_type_names();
// `value` in `type`'s range as two's-complement arithmetic leaves it (uint8: modulo 256; int8: 200
// is -56); Bool: value != 0; Int64, UInt64 (held in 64 bits) and the floating types: unchanged.
std::int64_t wrap_integer(DataType type, std::int64_t value);

}  // namespace unity
