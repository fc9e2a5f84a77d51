// Data types: names, sizes, and how integer results wrap into their type's range (the executor
// holds every integer as int64 and wraps what its kernels write).
#include <gtest/gtest.h>

#include "unity/core/errors.h"
#include "unity/core/pcg/data_type.h"

using namespace unity;

TEST(DataType, EveryTypeRoundTripsByNameWithItsSize) {
  const std::vector<std::pair<DataType, std::int64_t>> types = {
      {DataType::Float32, 4}, {DataType::Float16, 2}, {DataType::BFloat16, 2}, {DataType::Int8, 1},
      {DataType::UInt8, 1},   {DataType::Int16, 2},   {DataType::UInt16, 2},   {DataType::Int32, 4},
      {DataType::UInt32, 4},  {DataType::Int64, 8},   {DataType::UInt64, 8},   {DataType::Bool, 1}};
  for (const auto& [type, bytes] : types) {
    EXPECT_EQ(data_type_from_string(to_string(type)), type) << to_string(type);
    EXPECT_EQ(size_of(type), bytes) << to_string(type);
  }
  try {
    data_type_from_string("int4");
    FAIL() << "int4 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("uint8"), std::string::npos) << e.what();
  }
}

TEST(DataType, IntegersWrapAsTwosComplementArithmeticLeavesThem) {
  EXPECT_EQ(wrap_integer(DataType::UInt8, 300), 44);
  EXPECT_EQ(wrap_integer(DataType::UInt8, -1), 255);
  EXPECT_EQ(wrap_integer(DataType::Int8, 200), -56);
  EXPECT_EQ(wrap_integer(DataType::Int8, -129), 127);
  EXPECT_EQ(wrap_integer(DataType::Int16, 40000), 40000 - 65536);
  EXPECT_EQ(wrap_integer(DataType::UInt16, 70000), 70000 - 65536);
  EXPECT_EQ(wrap_integer(DataType::Int32, std::int64_t{1} << 31), -(std::int64_t{1} << 31));
  EXPECT_EQ(wrap_integer(DataType::UInt32, -1), 4294967295);
  EXPECT_EQ(wrap_integer(DataType::Int64, -5), -5);
  EXPECT_EQ(wrap_integer(DataType::Bool, 7), 1);
  EXPECT_EQ(wrap_integer(DataType::Bool, 0), 0);
}
