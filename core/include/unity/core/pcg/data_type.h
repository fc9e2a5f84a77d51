#pragma once
#include <cstdint>
#include <string_view>

namespace unity {

// Bool holds masks (comparisons, logic, Where's condition): one byte an element in memory and on
// the wire, as 0 or 1; the executor keeps every integer type, Bool among them, as int64.
enum class DataType { Float32, Float16, BFloat16, Int32, Int64, Bool };

std::int64_t size_of(DataType type);
std::string_view to_string(DataType type);
// Accepts our names ("float32", "int64", ...); throws InputError naming the unknown type.
DataType data_type_from_string(std::string_view name);
bool is_floating(DataType type);

}  // namespace unity
