#include "unity/core/pcg/data_type.h"

#include <array>
#include <string>

#include "unity/core/errors.h"

namespace unity {
namespace {

struct DataTypeEntry {
  DataType type;
  std::string_view name;
  std::int64_t bytes;
};

constexpr std::array<DataTypeEntry, 12> kDataTypes{{
    {DataType::Float32, "float32", 4},
    {DataType::Float16, "float16", 2},
    {DataType::BFloat16, "bfloat16", 2},
    {DataType::Int32, "int32", 4},
    {DataType::Int64, "int64", 8},
    {DataType::Bool, "bool", 1},
    {DataType::Int8, "int8", 1},
    {DataType::UInt8, "uint8", 1},
    {DataType::Int16, "int16", 2},
    {DataType::UInt16, "uint16", 2},
    {DataType::UInt32, "uint32", 4},
    {DataType::UInt64, "uint64", 8},
}};

const DataTypeEntry& entry(DataType type) {
  for (const auto& e : kDataTypes)
    if (e.type == type) return e;
  return kDataTypes[0];
}

}  // namespace

std::int64_t size_of(DataType type) { return entry(type).bytes; }
std::string_view to_string(DataType type) { return entry(type).name; }

DataType data_type_from_string(std::string_view name) {
  for (const auto& e : kDataTypes)
    if (e.name == name) return e.type;
  std::string known;
  for (std::string_view n : data_type_names())
    known += (known.empty() ? "" : ", ") + std::string(n);
  throw InputError("unknown data type '" + std::string(name) + "' (expected one of " + known + ")");
}

bool is_floating(DataType type) {
  return type == DataType::Float32 || type == DataType::Float16 || type == DataType::BFloat16;
}

std::vector<std::string_view> data_type_names() {
  std::vector<std::string_view> names;
  for (const auto& e : kDataTypes) names.push_back(e.name);
  return names;
}

std::int64_t wrap_integer(DataType type, std::int64_t value) {
  switch (type) {
    case DataType::Bool:
      return value != 0;
    case DataType::Int8:
      return static_cast<std::int8_t>(static_cast<std::uint8_t>(value));
    case DataType::UInt8:
      return static_cast<std::uint8_t>(value);
    case DataType::Int16:
      return static_cast<std::int16_t>(static_cast<std::uint16_t>(value));
    case DataType::UInt16:
      return static_cast<std::uint16_t>(value);
    case DataType::Int32:
      return static_cast<std::int32_t>(static_cast<std::uint32_t>(value));
    case DataType::UInt32:
      return static_cast<std::uint32_t>(value);
    default:
      return value;
  }
}

}  // namespace unity
