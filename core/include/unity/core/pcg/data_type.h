#pragma once
#include <cstdint>
#include <string_view>

namespace unity {

enum class DataType { Float32, Float16, BFloat16, Int32, Int64 };

std::int64_t size_of(DataType type);
std::string_view to_string(DataType type);
// Accepts our names ("float32", "int64", ...); throws InputError naming the unknown type.
DataType data_type_from_string(std::string_view name);
bool is_floating(DataType type);

}  // namespace unity
