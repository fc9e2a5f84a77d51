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

constexpr std::array<DataTypeEntry, 6> kDataTypes{{
    {DataType::Float32, "float32", 4},
    {DataType::Float16, "float16", 2},
    {DataType::BFloat16, "bfloat16", 2},
    {DataType::Int32, "int32", 4},
    {DataType::Int64, "int64", 8},
    {DataType::Bool, "bool", 1},
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
  throw InputError("unknown data type '" + std::string(name) +
                   "' (expected float32, float16, bfloat16, int32, int64 or bool)");
}

bool is_floating(DataType type) {
  return type == DataType::Float32 || type == DataType::Float16 || type == DataType::BFloat16;
}

}  // namespace unity
