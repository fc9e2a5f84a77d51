// Shape inference for every operator, on serial and parallel shapes, valid and invalid degrees.
#include <gtest/gtest.h>

#include "parallel_shape_literal.h"
#include "unity/core/errors.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/shapes/shape_inference.h"

using namespace unity;

namespace {

using test_shapes::S;

Operator Op(OpType t, Attributes a = {}) { return Operator{t, std::move(a), "op"}; }

ParallelTensorShape infer1(const Operator& op, std::vector<ParallelTensorShape> in) {
  auto out = infer_output_shapes(op, in);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

void expect_rejected(const Operator& op, std::vector<ParallelTensorShape> in,
                     const std::string& fragment) {
  try {
    infer_output_shapes(op, in);
    FAIL() << "expected a ShapeError containing '" << fragment << "'";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(ShapeInference, SourcesAreSerial) {
  auto y = infer1(Op(OpType::Input, {{"shape", std::vector<std::int64_t>{64, 784}},
                                     {"dtype", std::string("int64")}}),
                  {});
  EXPECT_EQ(y, S({{64, 1}, {784, 1}}, 1, DataType::Int64));
  expect_rejected(Op(OpType::Weight, {{"shape", std::vector<std::int64_t>{3, 0}}}), {},
                  "positive sizes");
  expect_rejected(Op(OpType::Weight,
                     {{"shape", std::vector<std::int64_t>{3}}, {"dtype", std::string("float8")}}),
                  {}, "unknown data type");
}

TEST(ShapeInference, AConstantHoldsOneValuePerElementOfItsType) {
  auto c = Op(OpType::Constant,
              {{"shape", std::vector<std::int64_t>{2, 3}}, {"dtype", std::string("int64")}});
  expect_rejected(c, {}, "must hold its values");
  c.values = TensorValues::of_integers({0, 1, 2, 3, 4, 5});
  EXPECT_EQ(infer1(c, {}), S({{2, 1}, {3, 1}}, 1, DataType::Int64));
  c.values = TensorValues::of_integers({0, 1, 2, 3});
  expect_rejected(c, {}, "holds 4 values for a shape of 6 elements");
  c.values = TensorValues::of_floats({0, 1, 2, 3, 4, 5});
  expect_rejected(c, {}, "holds floating values for a int64 tensor");
  auto w = Op(OpType::Weight, {{"shape", std::vector<std::int64_t>{1}}});
  w.values = TensorValues::of_floats({1});
  expect_rejected(w, {}, "only a Constant holds values");
}

TEST(ShapeInference, LinearSerialAndParallel) {
  auto lin = Op(OpType::Linear, {{"out_features", std::int64_t{512}}});
  EXPECT_EQ(infer1(lin, {S({{64, 1}, {784, 1}}), S({{784, 1}, {512, 1}})}), S({{64, 1}, {512, 1}}));
  // Data parallel: batch split in 2, weight replicated twice.
  EXPECT_EQ(infer1(lin, {S({{64, 2}, {784, 1}}), S({{784, 1}, {512, 1}}, 2)}),
            S({{64, 2}, {512, 1}}));
  // Reduction parallel: input channels split in 2 -> partial sums (replica 2).
  EXPECT_EQ(infer1(lin, {S({{64, 1}, {784, 2}}), S({{784, 2}, {512, 1}})}),
            S({{64, 1}, {512, 1}}, 2));
  // Output-channel parallel: input replicated, weight columns split.
  EXPECT_EQ(infer1(lin, {S({{64, 1}, {784, 1}}, 4), S({{784, 1}, {512, 4}})}),
            S({{64, 1}, {512, 4}}));
  // Bias follows the output channels.
  auto lin4 = Op(OpType::Linear, {{"out_features", std::int64_t{4}}});
  EXPECT_EQ(infer1(lin4, {S({{8, 2}, {16, 1}}), S({{16, 1}, {4, 1}}, 2), S({{4, 1}}, 2)}),
            S({{8, 2}, {4, 1}}));
  expect_rejected(lin4, {S({{8, 2}, {16, 1}}), S({{16, 1}, {4, 1}}, 2), S({{4, 1}})},
                  "one copy per sample and reduction task");

  expect_rejected(lin, {S({{64, 2}, {784, 1}}), S({{784, 1}, {512, 1}})},
                  "each sample partition needs its own copy");
  expect_rejected(lin, {S({{64, 1}, {784, 2}}), S({{784, 1}, {512, 1}})}, "reduction dim");
  expect_rejected(lin, {S({{64, 1}, {784, 1}}), S({{784, 1}, {512, 2}})},
                  "each output-channel partition reads the whole input");
  expect_rejected(lin, {S({{64, 1}, {100, 1}}), S({{784, 1}, {512, 1}})},
                  "dim 0 must have size 100");
  expect_rejected(Op(OpType::Linear,
                     {{"out_features", std::int64_t{512}}, {"activation", std::string("swish")}}),
                  {S({{64, 1}, {784, 1}}), S({{784, 1}, {512, 1}})}, "unknown activation");
  expect_rejected(Op(OpType::Linear), {S({{64, 1}, {784, 1}}), S({{784, 1}, {512, 1}})},
                  "missing attribute 'out_features'");
}

TEST(ShapeInference, MatMulAndBatchMatMul) {
  auto mm = Op(OpType::MatMul);
  EXPECT_EQ(infer1(mm, {S({{4, 1}, {8, 1}, {16, 1}}), S({{16, 1}, {32, 1}})}),
            S({{4, 1}, {8, 1}, {32, 1}}));
  // Shared right operand with a split batch: it needs one copy per batch partition.
  EXPECT_EQ(infer1(mm, {S({{4, 2}, {8, 1}, {16, 1}}), S({{16, 1}, {32, 1}}, 2)}),
            S({{4, 2}, {8, 1}, {32, 1}}));
  expect_rejected(mm, {S({{8, 1}, {16, 1}}), S({{17, 1}, {32, 1}})}, "inner dimensions differ");
  expect_rejected(mm, {S({{8, 1}, {16, 2}}), S({{16, 1}, {32, 1}})}, "reduction dim has degree");

  auto bmm = Op(OpType::BatchMatMul);
  // Attention heads (dim 1) split in 4: no replication, no reduction (paper 2.1, item 6).
  EXPECT_EQ(infer1(bmm, {S({{2, 1}, {16, 4}, {128, 1}, {64, 1}}),
                         S({{2, 1}, {16, 4}, {64, 1}, {128, 1}})}),
            S({{2, 1}, {16, 4}, {128, 1}, {128, 1}}));
  expect_rejected(
      bmm, {S({{2, 1}, {16, 4}, {128, 1}, {64, 1}}), S({{2, 1}, {16, 2}, {64, 1}, {128, 1}})},
      "batch dim 1 differs");
  expect_rejected(bmm, {S({{8, 1}, {16, 1}}), S({{16, 1}, {8, 1}})}, "equal rank >= 3");
}

TEST(ShapeInference, Conv2D) {
  Attributes a{{"out_channels", std::int64_t{64}},
               {"kernel", std::vector<std::int64_t>{7, 7}},
               {"stride", std::vector<std::int64_t>{2, 2}},
               {"padding", std::vector<std::int64_t>{3, 3}}};
  auto conv = Op(OpType::Conv2D, a);
  EXPECT_EQ(infer1(conv, {S({{64, 1}, {3, 1}, {224, 1}, {224, 1}}),
                          S({{64, 1}, {3, 1}, {7, 1}, {7, 1}})}),
            S({{64, 1}, {64, 1}, {112, 1}, {112, 1}}));
  // Sample x spatial split: weight replicated 2*2 = 4 times.
  EXPECT_EQ(infer1(conv, {S({{64, 2}, {3, 1}, {224, 2}, {224, 1}}),
                          S({{64, 1}, {3, 1}, {7, 1}, {7, 1}}, 4)}),
            S({{64, 2}, {64, 1}, {112, 2}, {112, 1}}));
  // Input-channel (reduction) split leaves partial sums.
  auto a3 = a;
  a3.set("kernel", std::vector<std::int64_t>{3, 3});
  a3.set("stride", std::vector<std::int64_t>{1, 1});
  a3.set("padding", std::vector<std::int64_t>{1, 1});
  EXPECT_EQ(infer1(Op(OpType::Conv2D, a3),
                   {S({{8, 1}, {32, 2}, {14, 1}, {14, 1}}), S({{64, 1}, {32, 2}, {3, 1}, {3, 1}})})
                .replica,
            2);
  // Grouped convolution: channels split by whole groups.
  auto g = a3;
  g.set("groups", std::int64_t{32});
  g.set("out_channels", std::int64_t{128});
  EXPECT_EQ(infer1(Op(OpType::Conv2D, g), {S({{8, 1}, {128, 4}, {14, 1}, {14, 1}}),
                                           S({{128, 4}, {4, 1}, {3, 1}, {3, 1}})}),
            S({{8, 1}, {128, 4}, {14, 1}, {14, 1}}));
  expect_rejected(Op(OpType::Conv2D, g),
                  {S({{8, 1}, {128, 4}, {14, 1}, {14, 1}}), S({{128, 2}, {4, 1}, {3, 1}, {3, 1}})},
                  "must equal output channel degree");
  expect_rejected(conv,
                  {S({{64, 1}, {3, 1}, {224, 1}, {224, 1}}), S({{64, 1}, {3, 1}, {5, 1}, {7, 1}})},
                  "dim 2 must have size 7");
  auto unpadded = a;
  unpadded.set("padding", std::vector<std::int64_t>{0, 0});
  expect_rejected(Op(OpType::Conv2D, unpadded),
                  {S({{64, 1}, {3, 1}, {2, 1}, {2, 1}}), S({{64, 1}, {3, 1}, {7, 1}, {7, 1}})},
                  "does not fit");
  // 112 / 3 is not whole: the spatial degree is rejected.
  expect_rejected(
      conv, {S({{64, 1}, {3, 1}, {224, 1}, {224, 3}}), S({{64, 1}, {3, 1}, {7, 1}, {7, 1}}, 3)},
      "not divisible by its degree 3");
}

TEST(ShapeInference, Pool2D) {
  auto pool = Op(OpType::Pool2D, {{"pool", std::string("max")},
                                  {"kernel", std::vector<std::int64_t>{3, 3}},
                                  {"stride", std::vector<std::int64_t>{2, 2}},
                                  {"padding", std::vector<std::int64_t>{1, 1}}});
  EXPECT_EQ(infer1(pool, {S({{64, 2}, {64, 1}, {112, 1}, {112, 1}})}),
            S({{64, 2}, {64, 1}, {56, 1}, {56, 1}}));
  expect_rejected(Op(OpType::Pool2D,
                     {{"pool", std::string("min")}, {"kernel", std::vector<std::int64_t>{2, 2}}}),
                  {S({{1, 1}, {1, 1}, {4, 1}, {4, 1}})}, "\"max\" or \"avg\"");
  // Asymmetric padding (ONNX's SAME_UPPER, ceil_mode's partial window) and dilation: a 5-wide
  // window of taps 2 apart over 7 + 0 + 2, stride 2.
  auto padded = Op(OpType::Pool2D, {{"pool", std::string("avg")},
                                    {"kernel", std::vector<std::int64_t>{3}},
                                    {"stride", std::vector<std::int64_t>{2}},
                                    {"padding", std::vector<std::int64_t>{0}},
                                    {"padding_end", std::vector<std::int64_t>{2}},
                                    {"dilation", std::vector<std::int64_t>{2}},
                                    {"count_include_pad", std::int64_t{1}}});
  EXPECT_EQ(infer1(padded, {S({{2, 1}, {3, 1}, {7, 1}})}), S({{2, 1}, {3, 1}, {3, 1}}));
  expect_rejected(padded, {S({{2, 1}, {3, 1}, {2, 1}})}, "with padding 0 and 2");
}

TEST(ShapeInference, Resize) {
  using Ints = std::vector<std::int64_t>;
  auto resize = Op(OpType::Resize, {{"axes", Ints{2, 3}},
                                    {"sizes", Ints{16, 24}},
                                    {"mode", std::string("linear")},
                                    {"coordinate_transformation_mode", std::string("half_pixel")}});
  // N and C keep their degrees and the replicas pass through; H and W take the new sizes.
  EXPECT_EQ(infer1(resize, {S({{8, 2}, {6, 3}, {8, 1}, {12, 1}}, 2)}),
            S({{8, 2}, {6, 3}, {16, 1}, {24, 1}}, 2));
  expect_rejected(resize, {S({{8, 1}, {6, 1}, {8, 2}, {12, 1}})},
                  "input 0 (x) dim 2 has degree 2 but must have degree 1 (a resized dim must be "
                  "whole)");
  expect_rejected(
      Op(OpType::Resize, {{"axes", Ints{2}}, {"sizes", Ints{4}}, {"mode", std::string("area")}}),
      {S({{1, 1}, {1, 1}, {4, 1}})}, "attribute 'mode' is 'area'");
  expect_rejected(Op(OpType::Resize, {{"axes", Ints{3}}, {"sizes", Ints{4}}}),
                  {S({{1, 1}, {1, 1}, {4, 1}})}, "attribute 'axes'");
  expect_rejected(Op(OpType::Resize, {{"axes", Ints{1, 2}}, {"sizes", Ints{4}}}),
                  {S({{1, 1}, {1, 1}, {4, 1}})}, "'sizes' has 1 values for 2 axes");
}

// 1-D and 3-D windows: the spatial rank follows x's rank, each spatial dim may be split.
TEST(ShapeInference, Conv1DAnd3DAndPooling) {
  using Ints = std::vector<std::int64_t>;
  auto conv1 = Op(OpType::Conv2D, {{"out_channels", std::int64_t{8}},
                                   {"kernel", Ints{10}},
                                   {"stride", Ints{5}},
                                   {"padding", Ints{0}}});
  EXPECT_EQ(infer1(conv1, {S({{4, 2}, {1, 1}, {1600, 1}}), S({{8, 1}, {1, 1}, {10, 1}}, 2)}),
            S({{4, 2}, {8, 1}, {319, 1}}));
  auto same1 = Op(OpType::Conv2D,
                  {{"out_channels", std::int64_t{8}}, {"kernel", Ints{3}}, {"padding", Ints{1}}});
  EXPECT_EQ(infer1(same1, {S({{4, 1}, {2, 1}, {1600, 2}}), S({{8, 1}, {2, 1}, {3, 1}}, 2)}),
            S({{4, 1}, {8, 1}, {1600, 2}}));
  auto conv3 = Op(OpType::Conv2D, {{"out_channels", std::int64_t{16}},
                                   {"kernel", Ints{3, 3, 3}},
                                   {"stride", Ints{1, 2, 2}},
                                   {"padding", Ints{1}}});
  EXPECT_EQ(infer1(conv3, {S({{2, 1}, {3, 1}, {4, 2}, {32, 1}, {32, 1}}),
                           S({{16, 1}, {3, 1}, {3, 1}, {3, 1}, {3, 1}}, 2)}),
            S({{2, 1}, {16, 1}, {4, 2}, {16, 1}, {16, 1}}));
  expect_rejected(conv3,
                  {S({{2, 1}, {3, 1}, {4, 1}, {32, 1}}), S({{16, 1}, {3, 1}, {3, 1}, {3, 1}})},
                  "must have 2 values");
  expect_rejected(conv1, {S({{4, 1}, {1, 1}}), S({{8, 1}, {1, 1}})}, "rank 3, 4 or 5");
  auto pool1 = Op(OpType::Pool2D, {{"pool", std::string("avg")}, {"kernel", Ints{2}}});
  EXPECT_EQ(infer1(pool1, {S({{4, 2}, {16, 1}, {31, 1}})}), S({{4, 2}, {16, 1}, {15, 1}}));
  auto pool3 = Op(OpType::Pool2D, {{"pool", std::string("max")},
                                   {"kernel", Ints{1, 3, 3}},
                                   {"stride", Ints{1, 2, 2}},
                                   {"padding", Ints{0, 1, 1}}});
  EXPECT_EQ(infer1(pool3, {S({{2, 1}, {8, 2}, {4, 1}, {16, 1}, {16, 1}})}),
            S({{2, 1}, {8, 2}, {4, 1}, {8, 1}, {8, 1}}));
}

TEST(ShapeInference, ConvTranspose) {
  using Ints = std::vector<std::int64_t>;
  auto ct = Op(OpType::ConvTranspose, {{"out_channels", std::int64_t{4}},
                                       {"kernel", Ints{2, 2}},
                                       {"stride", Ints{2, 2}},
                                       {"padding", Ints{0, 0}}});
  EXPECT_EQ(infer1(ct, {S({{8, 1}, {6, 1}, {5, 1}, {7, 1}}), S({{6, 1}, {4, 1}, {2, 1}, {2, 1}})}),
            S({{8, 1}, {4, 1}, {10, 1}, {14, 1}}));
  // Samples, output channels (x replicated), input channels (partial sums).
  EXPECT_EQ(infer1(ct, {S({{8, 2}, {6, 1}, {5, 1}, {7, 1}}, 2),
                        S({{6, 1}, {4, 2}, {2, 1}, {2, 1}}, 2), S({{4, 2}}, 2)}),
            S({{8, 2}, {4, 2}, {10, 1}, {14, 1}}));
  EXPECT_EQ(infer1(ct, {S({{8, 1}, {6, 3}, {5, 1}, {7, 1}}), S({{6, 3}, {4, 1}, {2, 1}, {2, 1}})})
                .replica,
            3);
  expect_rejected(ct, {S({{8, 1}, {6, 1}, {5, 1}, {7, 1}}), S({{4, 1}, {4, 1}, {2, 1}, {2, 1}})},
                  "dim 0 must have size 6");
  expect_rejected(ct, {S({{8, 1}, {6, 1}, {6, 2}, {7, 1}}), S({{6, 1}, {4, 1}, {2, 1}, {2, 1}})},
                  "keeps its spatial dims whole");
  // 1-D with output_padding and dilation; 3-D grouped.
  auto ct1 = Op(OpType::ConvTranspose, {{"out_channels", std::int64_t{2}},
                                        {"kernel", Ints{3}},
                                        {"stride", Ints{3}},
                                        {"padding", Ints{1}},
                                        {"dilation", Ints{2}},
                                        {"output_padding", Ints{1}}});
  // 3 * (4 - 1) + 2 * 2 + 1 - 2 + 1 = 13
  EXPECT_EQ(infer1(ct1, {S({{1, 1}, {3, 1}, {4, 1}}), S({{3, 1}, {2, 1}, {3, 1}})}),
            S({{1, 1}, {2, 1}, {13, 1}}));
  auto ct3 = Op(OpType::ConvTranspose, {{"out_channels", std::int64_t{4}},
                                        {"kernel", Ints{2}},
                                        {"stride", Ints{2}},
                                        {"groups", std::int64_t{2}}});
  EXPECT_EQ(infer1(ct3, {S({{1, 1}, {6, 2}, {2, 1}, {3, 1}, {4, 1}}),
                         S({{6, 2}, {2, 1}, {2, 1}, {2, 1}, {2, 1}})}),
            S({{1, 1}, {4, 2}, {4, 1}, {6, 1}, {8, 1}}));
}

TEST(ShapeInference, Normalisation) {
  auto bn = Op(OpType::BatchNorm);
  EXPECT_EQ(infer1(bn, {S({{8, 2}, {16, 1}, {4, 1}, {4, 1}}), S({{16, 1}}, 2), S({{16, 1}}, 2)}),
            S({{8, 2}, {16, 1}, {4, 1}, {4, 1}}));
  expect_rejected(bn, {S({{8, 1}, {16, 1}, {4, 2}, {4, 1}}), S({{16, 1}}), S({{16, 1}})},
                  "whole spatial planes");
  auto ln = Op(OpType::LayerNorm, {{"normalized_dims", std::int64_t{1}}});
  EXPECT_EQ(infer1(ln, {S({{4, 2}, {512, 1}, {1024, 1}}), S({{1024, 1}}, 2), S({{1024, 1}}, 2)}),
            S({{4, 2}, {512, 1}, {1024, 1}}));
  expect_rejected(ln, {S({{4, 1}, {512, 1}, {1024, 2}})}, "normalised dims must be whole");
}

TEST(ShapeInference, MultiHeadAttention) {
  auto mha = Op(OpType::MultiHeadAttention, {{"num_heads", std::int64_t{16}}});
  auto x = S({{4, 1}, {512, 1}, {1024, 1}}, 4);
  auto wi = S({{1024, 1}, {1024, 4}});
  auto wo = S({{1024, 4}, {1024, 1}});
  // Four head partitions: Megatron-style, output holds partial sums.
  EXPECT_EQ(infer1(mha, {x, x, x, wi, wi, wi, wo}), S({{4, 1}, {512, 1}, {1024, 1}}, 4));
  auto serial = S({{4, 1}, {512, 1}, {1024, 1}});
  auto w = S({{1024, 1}, {1024, 1}});
  EXPECT_EQ(infer1(mha, {serial, serial, serial, w, w, w, w}), serial);
  expect_rejected(Op(OpType::MultiHeadAttention, {{"num_heads", std::int64_t{6}}}),
                  {serial, serial, serial, w, w, w, w}, "not divisible by num_heads");
  auto wi3 = S({{1024, 1}, {1024, 32}});
  expect_rejected(mha, {S({{4, 1}, {512, 1}, {1024, 1}}, 32), serial, serial, wi3, wi3, wi3, w},
                  "does not divide num_heads");
}

// Context parallelism: the query sequence split in d_s blocks, each attending to the whole keys
// and values; key, value and weights gain a copy per block, the output is split like the query.
TEST(ShapeInference, MultiHeadAttentionSplitsTheQuerySequence) {
  auto mha = Op(OpType::MultiHeadAttention, {{"num_heads", std::int64_t{16}}});
  auto w = S({{1024, 1}, {1024, 1}});
  auto q = S({{4, 1}, {512, 2}, {1024, 1}});
  auto kv = S({{4, 1}, {512, 1}, {1024, 1}}, 2);
  auto w2 = S({{1024, 1}, {1024, 1}}, 2);
  EXPECT_EQ(infer1(mha, {q, kv, kv, w2, w2, w2, w2}), S({{4, 1}, {512, 2}, {1024, 1}}));
  // With samples in 2, blocks in 2 and heads in 4: keys copied per head and block (8), weights
  // per sample and block (4), the output split like the query and summed over heads.
  auto q3 = S({{4, 2}, {512, 2}, {1024, 1}}, 4);
  auto kv3 = S({{4, 2}, {512, 1}, {1024, 1}}, 8);
  auto wi = S({{1024, 1}, {1024, 4}}, 4);
  auto wo = S({{1024, 4}, {1024, 1}}, 4);
  EXPECT_EQ(infer1(mha, {q3, kv3, kv3, wi, wi, wi, wo}), S({{4, 2}, {512, 2}, {1024, 1}}, 4));
  // Grouped-query, rotary, causal attention splits alike (the kernels take absolute positions).
  auto llama = Op(OpType::MultiHeadAttention, {{"num_heads", std::int64_t{16}},
                                               {"num_kv_heads", std::int64_t{4}},
                                               {"rotary", std::int64_t{1}},
                                               {"causal", std::int64_t{1}}});
  auto wkv = S({{1024, 1}, {256, 1}}, 2);
  EXPECT_EQ(infer1(llama, {q, kv, kv, w2, wkv, wkv, w2}), S({{4, 1}, {512, 2}, {1024, 1}}));

  // The keys and values stay whole along the sequence.
  auto kv_split = S({{4, 1}, {512, 2}, {1024, 1}});
  expect_rejected(mha, {q, kv_split, kv_split, w2, w2, w2, w2},
                  "input 1 (key) dim 1 has degree 2 but must have degree 1 (attention reads the "
                  "whole sequence)");
  expect_rejected(mha, {q, kv, S({{4, 1}, {512, 2}, {1024, 1}}, 2), w2, w2, w2, w2},
                  "input 2 (value) dim 1 has degree 2");
  // Every block reads a copy of the keys, the values and the weights.
  auto serial = S({{4, 1}, {512, 1}, {1024, 1}});
  expect_rejected(mha, {q, serial, serial, w2, w2, w2, w2},
                  "input 1 (key) has replica degree 1 but must have 2 (each head partition and "
                  "query block reads the whole input)");
  expect_rejected(mha, {q, kv, kv, w, w, w, w},
                  "has replica degree 1 but must have 2 (one copy per sample partition and query "
                  "block)");
  expect_rejected(mha, {q, kv, kv, w2, w2, w2, w}, "input 6 (w_o");
  // The embedding is still whole.
  expect_rejected(mha, {S({{4, 1}, {512, 1}, {1024, 2}}), serial, serial, w, w, w, w},
                  "input 0 (query) dim 2 has degree 2 but must have degree 1 (heads are split "
                  "through the weights)");
}

TEST(ShapeInference, EmbeddingAndBag) {
  auto emb = Op(OpType::Embedding,
                {{"num_entries", std::int64_t{1000}}, {"embedding_dim", std::int64_t{64}}});
  EXPECT_EQ(infer1(emb, {S({{8, 1}, {5, 1}}, 1, DataType::Int64), S({{1000, 1}, {64, 1}})}),
            S({{8, 1}, {5, 1}, {64, 1}}));
  auto bag = Op(OpType::EmbeddingBag, {{"num_entries", std::int64_t{1000}},
                                       {"embedding_dim", std::int64_t{64}},
                                       {"aggregate", std::string("sum")}});
  // Row-sharded table: each shard's lookups are partial sums.
  EXPECT_EQ(infer1(bag, {S({{8, 1}, {5, 1}}, 4, DataType::Int64), S({{1000, 4}, {64, 1}})}),
            S({{8, 1}, {64, 1}}, 4));
  expect_rejected(bag, {S({{8, 1}, {5, 1}}), S({{1000, 1}, {64, 1}})}, "integer tensor");
  expect_rejected(bag, {S({{8, 1}, {5, 5}}, 1, DataType::Int64), S({{1000, 1}, {64, 1}})},
                  "a bag is aggregated on one device");
}

TEST(ShapeInference, ElementwiseUnaryAndBinary) {
  auto x = S({{8, 2}, {16, 1}});
  for (auto t : {OpType::Relu, OpType::Gelu, OpType::Sigmoid, OpType::Tanh, OpType::Exp,
                 OpType::Sqrt, OpType::Erf, OpType::Identity})
    EXPECT_EQ(infer1(Op(t), {x}), x) << to_string(t);
  EXPECT_EQ(infer1(Op(OpType::ScalarMul, {{"scalar", 0.5}}), {x}), x);
  expect_rejected(Op(OpType::Pow), {x}, "missing attribute 'scalar'");
  expect_rejected(Op(OpType::Dropout, {{"rate", 1.5}}), {x}, "[0, 1)");

  EXPECT_EQ(infer1(Op(OpType::Add), {x, x}), x);
  // A bias [16] broadcast over a batch split in 2 needs two copies.
  EXPECT_EQ(infer1(Op(OpType::Add), {x, S({{16, 1}}, 2)}), x);
  expect_rejected(Op(OpType::Add), {x, S({{16, 1}})}, "replica degrees");
  expect_rejected(Op(OpType::Mul), {x, S({{8, 1}, {16, 1}})}, "dim 0 has degree 2");
  expect_rejected(Op(OpType::Sub), {x, S({{8, 2}, {15, 1}})}, "cannot broadcast");
  expect_rejected(Op(OpType::Div), {x, S({{8, 2}, {16, 1}}, 1, DataType::Int64)}, "differ in type");
}

TEST(ShapeInference, ConcatSplitReshapeFlattenTranspose) {
  auto cat = Op(OpType::Concat, {{"axis", std::int64_t{1}}});
  EXPECT_EQ(infer1(cat, {S({{8, 2}, {3, 1}}), S({{8, 2}, {5, 1}})}), S({{8, 2}, {8, 1}}));
  expect_rejected(cat, {S({{8, 1}, {4, 2}}), S({{8, 1}, {4, 2}})}, "must be whole");
  expect_rejected(cat, {S({{8, 2}, {3, 1}}), S({{8, 1}, {5, 1}})}, "differs from input 0");
  // Pieces cut the axis between whole inputs: 8 | 4 + 4 in two, or 4 | 4 | 4 | 4 in two or four.
  auto pieces = [](std::int64_t p) {
    return Op(OpType::Concat, {{"axis", std::int64_t{1}}, {"pieces", p}});
  };
  EXPECT_EQ(infer1(pieces(2), {S({{6, 3}, {8, 1}}), S({{6, 3}, {4, 1}}), S({{6, 3}, {4, 1}})}),
            S({{6, 3}, {16, 2}}));
  const std::vector<ParallelTensorShape> four(4, S({{6, 1}, {4, 1}}));
  EXPECT_EQ(infer1(pieces(4), four), S({{6, 1}, {16, 4}}));
  expect_rejected(pieces(3), four, "do not divide");
  expect_rejected(pieces(2), {S({{6, 1}, {4, 1}}), S({{6, 1}, {8, 1}}), S({{6, 1}, {4, 1}})},
                  "straddles");

  auto split =
      Op(OpType::Split, {{"axis", std::int64_t{1}}, {"sizes", std::vector<std::int64_t>{2, 6}}});
  auto outs = infer_output_shapes(split, {S({{8, 2}, {8, 1}})});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[1], S({{8, 2}, {6, 1}}));
  expect_rejected(split, {S({{8, 2}, {9, 1}})}, "add up to 8");

  auto reshape = Op(OpType::Reshape, {{"shape", std::vector<std::int64_t>{32, 1024}}});
  EXPECT_EQ(infer1(reshape, {S({{4, 2}, {8, 1}, {1024, 1}})}), S({{32, 2}, {1024, 1}}));
  // 8 is not the outermost of the dims merged into 32: its pieces would be strided.
  expect_rejected(reshape, {S({{4, 1}, {8, 2}, {1024, 1}})}, "only the outermost dim");
  // nn.MultiheadAttention's heads: [s, n, e] -> [s, n*h, d] keeps n's partition on n*h, and back.
  auto heads = Op(OpType::Reshape, {{"shape", std::vector<std::int64_t>{16, 32, 8}}});
  EXPECT_EQ(infer1(heads, {S({{16, 1}, {8, 2}, {32, 1}})}), S({{16, 1}, {32, 2}, {8, 1}}));
  auto rows = Op(OpType::Reshape, {{"shape", std::vector<std::int64_t>{16, 8, 32}}});
  EXPECT_EQ(infer1(rows, {S({{16, 1}, {32, 2}, {8, 1}})}), S({{16, 1}, {8, 2}, {32, 1}}));
  // A partition the new outermost dim cannot divide is refused, naming both.
  expect_rejected(Op(OpType::Reshape, {{"shape", std::vector<std::int64_t>{2, 16}}}),
                  {S({{8, 4}, {4, 1}})}, "not divisible");
  // Unit dims do not start a group: [8, 1, 32] -> [8, 32] keeps both partitions.
  EXPECT_EQ(infer1(Op(OpType::Reshape, {{"shape", std::vector<std::int64_t>{8, 32}}}),
                   {S({{8, 2}, {1, 1}, {32, 4}})}),
            S({{8, 2}, {32, 4}}));
  expect_rejected(Op(OpType::Reshape, {{"shape", std::vector<std::int64_t>{-1, 1024}}}),
                  {S({{4, 1}, {8, 1}, {1024, 1}})}, "fully resolved");

  auto flat = Op(OpType::Flatten, {{"axis", std::int64_t{1}}});
  EXPECT_EQ(infer1(flat, {S({{64, 2}, {2048, 1}, {1, 1}, {1, 1}})}), S({{64, 2}, {2048, 1}}));
  expect_rejected(flat, {S({{64, 1}, {2048, 1}, {2, 2}, {1, 1}})}, "first dim of a merged group");

  auto tr = Op(OpType::Transpose, {{"perm", std::vector<std::int64_t>{0, 2, 1, 3}}});
  EXPECT_EQ(infer1(tr, {S({{4, 2}, {512, 1}, {16, 4}, {64, 1}})}),
            S({{4, 2}, {16, 4}, {512, 1}, {64, 1}}));
  expect_rejected(Op(OpType::Transpose, {{"perm", std::vector<std::int64_t>{0, 0, 1, 2}}}),
                  {S({{4, 1}, {5, 1}, {6, 1}, {7, 1}})}, "not a permutation");
}

TEST(ShapeInference, ExpandBroadcastsAndKeepsCopiedPartitions) {
  // ViT's class token [1, 1, e] for a batch of 8; copied dims keep their degree and the replica.
  auto token = Op(OpType::Expand, {{"shape", std::vector<std::int64_t>{8, 1, 32}}});
  EXPECT_EQ(infer1(token, {S({{1, 1}, {1, 1}, {32, 1}}, 2)}), S({{8, 1}, {1, 1}, {32, 1}}, 2));
  EXPECT_EQ(infer1(token, {S({{32, 4}})}), S({{8, 1}, {1, 1}, {32, 4}}));
  expect_rejected(token, {S({{2, 1}, {1, 1}, {32, 1}})}, "cannot be broadcast");
  expect_rejected(Op(OpType::Expand, {{"shape", std::vector<std::int64_t>{32}}}),
                  {S({{1, 1}, {32, 1}})}, "below the input's rank");
}

TEST(ShapeInference, SoftmaxReductionsAndLosses) {
  EXPECT_EQ(infer1(Op(OpType::Softmax, {{"axis", std::int64_t{-1}}}), {S({{8, 2}, {10, 1}})}),
            S({{8, 2}, {10, 1}}));
  expect_rejected(Op(OpType::Softmax, {{"axis", std::int64_t{1}}}), {S({{8, 1}, {10, 2}})},
                  "whole axis");
  expect_rejected(Op(OpType::Softmax, {{"axis", std::int64_t{3}}}), {S({{8, 1}, {10, 1}})},
                  "out of range");
  // Reducing a split axis gives partial sums.
  EXPECT_EQ(infer1(Op(OpType::ReduceSum,
                      {{"axes", std::vector<std::int64_t>{1}}, {"keepdims", std::int64_t{0}}}),
                   {S({{8, 1}, {6, 3}})}),
            S({{8, 1}}, 3));
  EXPECT_EQ(infer1(Op(OpType::ReduceMean,
                      {{"axes", std::vector<std::int64_t>{-1}}, {"keepdims", std::int64_t{1}}}),
                   {S({{8, 2}, {6, 1}})}),
            S({{8, 2}, {1, 1}}));
  // Reduction: l1 and sum_square of a split axis are partial sums; the others read it whole.
  auto reduction = [](const char* kind) {
    return Op(OpType::Reduction, {{"reduction", std::string(kind)},
                                  {"axes", std::vector<std::int64_t>{1}},
                                  {"keepdims", std::int64_t{0}}});
  };
  EXPECT_EQ(infer1(reduction("l1"), {S({{8, 2}, {6, 3}})}), S({{8, 2}}, 3));
  EXPECT_EQ(infer1(reduction("sum_square"), {S({{8, 1}, {6, 2}})}), S({{8, 1}}, 2));
  EXPECT_EQ(infer1(reduction("max"), {S({{8, 4}, {6, 1}})}), S({{8, 4}}));
  for (const char* kind : {"max", "min", "prod", "l2", "log_sum", "log_sum_exp"})
    expect_rejected(reduction(kind), {S({{8, 1}, {6, 2}})}, "is not a sum of its blocks");
  expect_rejected(reduction("median"), {S({{8, 1}, {6, 1}})}, "'reduction'");
  expect_rejected(reduction("max"), {S({{8, 1}, {6, 1}}, 1, DataType::Int64)}, "floating");

  auto ce = Op(OpType::SoftmaxCrossEntropy);
  EXPECT_EQ(infer1(ce, {S({{64, 2}, {10, 1}}), S({{64, 2}}, 1, DataType::Int64)}), S({{64, 2}}));
  expect_rejected(ce, {S({{64, 1}, {10, 2}}), S({{64, 1}}, 1, DataType::Int64)}, "every class");
  expect_rejected(ce, {S({{64, 1}, {10, 1}}), S({{64, 1}})}, "integer tensor");
  auto mse = Op(OpType::MSELoss);
  EXPECT_EQ(infer1(mse, {S({{64, 2}, {1, 1}}), S({{64, 2}, {1, 1}})}), S({{64, 2}}));
  expect_rejected(mse, {S({{64, 2}, {1, 1}}), S({{64, 1}, {1, 1}})}, "differ");
}

TEST(ShapeInference, ParallelOperators) {
  auto x = S({{64, 1}, {784, 1}});
  auto part = Op(OpType::Partition, {{"dim", std::int64_t{0}}, {"degree", std::int64_t{4}}});
  EXPECT_EQ(infer1(part, {x}), S({{64, 4}, {784, 1}}));
  EXPECT_EQ(infer1(part, {S({{64, 2}, {784, 1}})}), S({{64, 8}, {784, 1}}));
  expect_rejected(Op(OpType::Partition, {{"dim", std::int64_t{1}}, {"degree", std::int64_t{5}}}),
                  {x}, "cannot be split into 1 x 5");
  expect_rejected(Op(OpType::Partition, {{"dim", std::int64_t{0}}, {"degree", std::int64_t{0}}}),
                  {x}, "'degree' must be between");

  auto comb = Op(OpType::Combine, {{"dim", std::int64_t{0}}, {"degree", std::int64_t{2}}});
  EXPECT_EQ(infer1(comb, {S({{64, 4}, {784, 1}})}), S({{64, 2}, {784, 1}}));
  expect_rejected(comb, {S({{64, 3}, {784, 1}})}, "does not divide dim 0's degree 3");

  auto rep = Op(OpType::Replicate, {{"degree", std::int64_t{3}}});
  EXPECT_EQ(infer1(rep, {x}), S({{64, 1}, {784, 1}}, 3));
  auto red = Op(OpType::Reduce, {{"degree", std::int64_t{3}}});
  EXPECT_EQ(infer1(red, {S({{64, 1}, {784, 1}}, 6)}), S({{64, 1}, {784, 1}}, 2));
  expect_rejected(red, {S({{64, 1}, {784, 1}}, 2)}, "does not divide the input's replica degree 2");
  auto ar = Op(OpType::AllReduce, {{"degree", std::int64_t{2}}});
  EXPECT_EQ(infer1(ar, {S({{64, 1}, {784, 1}}, 2)}), S({{64, 1}, {784, 1}}, 2));
  expect_rejected(ar, {x}, "replica degree 1");

  auto pipe = Op(OpType::Pipeline, {{"dim", std::int64_t{0}}, {"degree", std::int64_t{4}}});
  EXPECT_EQ(infer1(pipe, {x}), S({{16, 1}, {784, 1}}));
  expect_rejected(pipe, {S({{64, 32}, {784, 1}})}, "cannot be pipelined");
  auto batch = Op(OpType::Batch, {{"dim", std::int64_t{0}}, {"degree", std::int64_t{4}}});
  EXPECT_EQ(infer1(batch, {S({{16, 1}, {784, 1}})}), x);
}

TEST(ShapeInference, ArityIsChecked) {
  expect_rejected(Op(OpType::Relu), {}, "takes 1 inputs, got 0");
  auto x = S({{2, 1}});
  expect_rejected(Op(OpType::Linear, {{"out_features", std::int64_t{2}}}), {x}, "at least 2");
}

TEST(ShapeInference, EveryOperatorIsCovered) {
  // Guards the tests above: a new OpType must get a test here, or be described by its definition
  // (point-wise, along an axis), which test_operator_definitions.cpp checks whole, or have a
  // slice layout and a test of its own (Random, Det: tests/executor/test_*_operator.cpp).
  int undescribed = 0;
  for (const OperatorDefinition* d : operator_definitions())
    undescribed += !d->pointwise && !d->along_axis && !d->slices;
  EXPECT_EQ(undescribed,
            55);  // 35, Constant, Resize, the index operators, Pad, GatherND, ScatterND,
                  // ConvTranspose, Experts, Compare, Logical, Where, Cast, Reduction,
                  // LatentAttention, Arithmetic (test_arithmetic_operator.cpp)
}

// The index operators read their axis whole and split every other dim alike on all inputs.
TEST(ShapeInference, IndexOperators) {
  const auto I64 = DataType::Int64;
  auto topk = Op(OpType::TopK, {{"k", std::int64_t{2}}, {"axis", std::int64_t{1}}});
  auto out = infer_output_shapes(topk, {S({{8, 4}, {6, 1}}, 2)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], S({{8, 4}, {2, 1}}, 2));
  EXPECT_EQ(out[1], S({{8, 4}, {2, 1}}, 2, I64));
  expect_rejected(topk, {S({{8, 1}, {6, 2}})}, "input 0 (x) dim 1 has degree 2");
  expect_rejected(Op(OpType::TopK, {{"k", std::int64_t{7}}, {"axis", std::int64_t{1}}}),
                  {S({{8, 1}, {6, 1}})}, "exceeds the size 6");

  auto gather = Op(OpType::GatherElements, {{"axis", std::int64_t{1}}});
  EXPECT_EQ(infer1(gather, {S({{8, 2}, {6, 1}}), S({{8, 2}, {3, 1}}, 1, I64)}),
            S({{8, 2}, {3, 1}}));
  expect_rejected(gather, {S({{8, 2}, {6, 1}}), S({{8, 4}, {3, 1}}, 1, I64)},
                  "input 0 (data) dim 0 has degree 2 but input 1 (indices) dim 0 has degree 4");
  expect_rejected(gather, {S({{8, 2}, {6, 1}}), S({{4, 2}, {3, 1}}, 1, I64)}, "its size differs");
  expect_rejected(gather, {S({{8, 1}, {6, 1}}), S({{8, 1}, {3, 1}})}, "integer tensor");

  auto scatter =
      Op(OpType::ScatterElements, {{"axis", std::int64_t{1}}, {"reduction", std::string("add")}});
  EXPECT_EQ(
      infer1(scatter, {S({{8, 2}, {6, 1}}), S({{8, 2}, {2, 1}}, 1, I64), S({{8, 2}, {2, 1}})}),
      S({{8, 2}, {6, 1}}));
  expect_rejected(scatter, {S({{8, 1}, {6, 2}}), S({{8, 1}, {2, 1}}, 1, I64), S({{8, 1}, {2, 1}})},
                  "reads the axis whole");
  expect_rejected(Op(OpType::ScatterElements, {{"reduction", std::string("max")}}),
                  {S({{8, 1}}), S({{2, 1}}, 1, I64), S({{2, 1}})}, "'reduction'");

  auto one_hot = Op(OpType::OneHot, {{"depth", std::int64_t{5}}, {"axis", std::int64_t{-1}}});
  EXPECT_EQ(infer1(one_hot, {S({{8, 2}, {3, 1}}, 1, I64)}), S({{8, 2}, {3, 1}, {5, 1}}));
  EXPECT_EQ(infer1(Op(OpType::OneHot, {{"depth", std::int64_t{5}}, {"axis", std::int64_t{1}}}),
                   {S({{8, 2}, {3, 1}}, 1, I64)}),
            S({{8, 2}, {5, 1}, {3, 1}}));
  // Floating-point indices truncate (ONNX casts them to int64); integer values give int64.
  EXPECT_EQ(infer1(one_hot, {S({{8, 1}})}), S({{8, 1}, {5, 1}}));
  EXPECT_EQ(
      infer1(Op(OpType::OneHot, {{"depth", std::int64_t{5}}, {"dtype", std::string("int64")}}),
             {S({{8, 2}}, 1, I64)}),
      S({{8, 2}, {5, 1}}, 1, I64));
  expect_rejected(Op(OpType::OneHot, {{"depth", std::int64_t{5}}, {"dtype", std::string("int32")}}),
                  {S({{8, 1}}, 1, I64)}, "'dtype'");

  EXPECT_EQ(infer1(Op(OpType::ArgMax, {{"axis", std::int64_t{1}}}), {S({{8, 2}, {6, 1}})}),
            S({{8, 2}, {1, 1}}, 1, I64));
  EXPECT_EQ(infer1(Op(OpType::ArgMin, {{"axis", std::int64_t{0}}, {"keepdims", std::int64_t{0}}}),
                   {S({{8, 1}, {6, 3}})}),
            S({{6, 3}}, 1, I64));
  expect_rejected(Op(OpType::ArgMax), {S({{8, 2}})}, "reads the axis whole");
}

// Pad keeps the degree of a dim it does not pad and refuses a split of one it pads; GatherND
// splits its batch dims alike on data and indices; ScatterND splits nothing.
TEST(ShapeInference, PadAndNdIndexOperators) {
  using Ints = std::vector<std::int64_t>;
  const auto I64 = DataType::Int64;
  auto pad = Op(OpType::Pad, {{"pads", Ints{0, 1, 0, 2}}});
  EXPECT_EQ(infer1(pad, {S({{8, 4}, {6, 1}}, 2)}), S({{8, 4}, {9, 1}}, 2));
  expect_rejected(pad, {S({{8, 1}, {6, 2}})}, "input 0 (x) dim 1 has degree 2");
  EXPECT_EQ(infer1(Op(OpType::Pad, {{"pads", Ints{-1, 0, 2, 0}}}), {S({{8, 1}, {6, 3}})}),
            S({{9, 1}, {6, 3}}));
  expect_rejected(Op(OpType::Pad, {{"pads", Ints{0, -1, 0, 0}}, {"mode", std::string("edge")}}),
                  {S({{8, 1}, {6, 1}})}, "only supported in constant mode");
  expect_rejected(Op(OpType::Pad, {{"pads", Ints{0, 1}}}), {S({{8, 1}, {6, 1}})}, "2 x rank");
  expect_rejected(Op(OpType::Pad, {{"pads", Ints{0, 1, 0, 1}}, {"mode", std::string("wrap")}}),
                  {S({{8, 1}, {6, 1}})}, "'mode'");

  auto gnd = Op(OpType::GatherND, {{"batch_dims", std::int64_t{1}}});
  EXPECT_EQ(infer1(gnd, {S({{8, 2}, {6, 1}, {5, 1}}), S({{8, 2}, {3, 1}, {1, 1}}, 1, I64)}),
            S({{8, 2}, {3, 1}, {5, 1}}));
  expect_rejected(gnd, {S({{8, 2}, {6, 1}, {5, 1}}), S({{8, 1}, {3, 1}, {1, 1}}, 1, I64)},
                  "split alike");
  expect_rejected(Op(OpType::GatherND), {S({{8, 1}, {6, 2}}), S({{3, 1}, {1, 1}}, 1, I64)},
                  "input 0 (data) dim 1 has degree 2");
  EXPECT_EQ(infer1(Op(OpType::GatherND), {S({{8, 1}, {6, 1}}), S({{3, 1}, {2, 1}}, 1, I64)}),
            S({{3, 1}}));

  auto snd = Op(OpType::ScatterND, {{"reduction", std::string("add")}});
  EXPECT_EQ(infer1(snd, {S({{8, 1}, {6, 1}}), S({{3, 1}, {1, 1}}, 1, I64), S({{3, 1}, {6, 1}})}),
            S({{8, 1}, {6, 1}}));
  expect_rejected(snd, {S({{8, 1}, {6, 1}}), S({{3, 1}, {1, 1}}, 1, I64), S({{3, 1}, {5, 1}})},
                  "input 2 (updates)");
  expect_rejected(snd, {S({{8, 2}, {6, 1}}), S({{3, 1}, {1, 1}}, 1, I64), S({{3, 1}, {6, 1}})},
                  "any index tuple may write anywhere");
}

// Experts over x [T, H] and gates [T, E]: tokens, experts and the FFN width split; the output's
// replica is the experts' degree times the FFN's (partial sums).
// LatentAttention: x [2, 5, 16], 4 heads of 6 + 2 rotary (queries and keys) and 3 (values), a
// query latent of 8 and a key/value latent of 4.
TEST(ShapeInference, LatentAttention) {
  const auto mla = Op(OpType::LatentAttention, {{"num_heads", std::int64_t{4}},
                                                {"qk_nope_head_dim", std::int64_t{6}},
                                                {"qk_rope_head_dim", std::int64_t{2}},
                                                {"v_head_dim", std::int64_t{3}},
                                                {"causal", std::int64_t{1}}});
  // x, w_dq, q_norm, w_uq, w_dkv, kv_norm, w_ukv, w_o with sample degree n, head degree h.
  auto inputs = [](int n, int h) {
    return std::vector<ParallelTensorShape>{
        S({{2, n}, {5, 1}, {16, 1}}, h), S({{16, 1}, {8, 1}}, n * h), S({{8, 1}}, n * h),
        S({{8, 1}, {32, h}}, n),         S({{16, 1}, {6, 1}}, n * h), S({{4, 1}}, n * h),
        S({{4, 1}, {36, h}}, n),         S({{12, h}, {16, 1}}, n)};
  };
  EXPECT_EQ(infer1(mla, inputs(1, 1)), S({{2, 1}, {5, 1}, {16, 1}}));
  // Samples by 2, heads by 2: the output is partial sums over the head blocks.
  EXPECT_EQ(infer1(mla, inputs(2, 2)), S({{2, 2}, {5, 1}, {16, 1}}, 2));
  EXPECT_EQ(infer1(mla, inputs(1, 4)), S({{2, 1}, {5, 1}, {16, 1}}, 4));
  // Without query compression (DeepSeek-V2-Lite): x, w_uq [E, ...], w_dkv, kv_norm, w_ukv, w_o.
  auto lite = inputs(1, 2);
  lite.erase(lite.begin() + 1, lite.begin() + 3);
  lite[1] = S({{16, 1}, {32, 2}});
  EXPECT_EQ(infer1(mla, lite), S({{2, 1}, {5, 1}, {16, 1}}, 2));
  auto bad = inputs(1, 2);
  bad[6] = S({{4, 1}, {36, 1}});  // w_ukv not split like w_uq
  expect_rejected(mla, bad, "w_ukv [kv_lora, heads x (nope + v)] dim 1 has degree 1");
  bad = inputs(1, 2);
  bad[1] = S({{16, 1}, {8, 2}});  // a down projection split
  expect_rejected(mla, bad, "only the heads split a weight");
  bad = inputs(1, 1);
  bad[0] = S({{2, 1}, {5, 5}, {16, 1}});
  expect_rejected(mla, bad, "attention reads the whole sequence");
  bad = inputs(1, 1);
  bad[6] = S({{4, 1}, {32, 1}});
  expect_rejected(mla, bad, "must have size 36");
  expect_rejected(mla, inputs(1, 3), "head degree 3 does not divide num_heads 4");
  auto wrong_rank = mla;
  wrong_rank.attrs.set("kv_lora_rank", std::int64_t{5});
  expect_rejected(wrong_rank, inputs(1, 1), "kv_lora_rank 5 does not match kv_norm's 4");
}

TEST(ShapeInference, Experts) {
  const auto ex = Op(OpType::Experts, {{"top_k", std::int64_t{2}}});
  // Serial: 8 tokens of 16, 4 experts of width 6.
  EXPECT_EQ(infer1(ex, {S({{8, 1}, {16, 1}}), S({{8, 1}, {4, 1}}), S({{4, 1}, {16, 1}, {6, 1}}),
                        S({{4, 1}, {6, 1}, {16, 1}}), S({{4, 1}, {16, 1}, {6, 1}})}),
            S({{8, 1}, {16, 1}}));
  // Tokens by 2 (weights copied twice) and experts by 2 (x copied twice): replica 2 out.
  EXPECT_EQ(
      infer1(ex, {S({{8, 2}, {16, 1}}, 2), S({{8, 2}, {4, 2}}), S({{4, 2}, {16, 1}, {6, 1}}, 2),
                  S({{4, 2}, {6, 1}, {16, 1}}, 2), S({{4, 2}, {16, 1}, {6, 1}}, 2)}),
      S({{8, 2}, {16, 1}}, 2));
  // Experts by 2 and the FFN width by 3: x copied 6 times, the gates 3 times, replica 6 out.
  EXPECT_EQ(
      infer1(ex, {S({{8, 1}, {16, 1}}, 6), S({{8, 1}, {4, 2}}, 3), S({{4, 2}, {16, 1}, {6, 3}}),
                  S({{4, 2}, {6, 3}, {16, 1}}), S({{4, 2}, {16, 1}, {6, 3}})}),
      S({{8, 1}, {16, 1}}, 6));
  // GELU experts take no w3.
  EXPECT_EQ(infer1(Op(OpType::Experts, {{"top_k", std::int64_t{1}}, {"mlp", std::string("gelu")}}),
                   {S({{8, 1}, {16, 1}}), S({{8, 1}, {4, 1}}), S({{4, 1}, {16, 1}, {6, 1}}),
                    S({{4, 1}, {6, 1}, {16, 1}})}),
            S({{8, 1}, {16, 1}}));
  expect_rejected(ex,
                  {S({{8, 1}, {16, 1}}), S({{8, 1}, {4, 1}}), S({{4, 1}, {16, 1}, {6, 1}}),
                   S({{4, 1}, {6, 1}, {16, 1}})},
                  "takes x, gates and 3 weights");
  expect_rejected(ex,
                  {S({{8, 1}, {16, 2}}, 1), S({{8, 1}, {4, 1}}), S({{4, 1}, {16, 1}, {6, 1}}),
                   S({{4, 1}, {6, 1}, {16, 1}}), S({{4, 1}, {16, 1}, {6, 1}})},
                  "every expert reads the whole hidden state");
  // The experts split on the gates but not on w2.
  expect_rejected(ex,
                  {S({{8, 1}, {16, 1}}, 2), S({{8, 1}, {4, 2}}), S({{4, 2}, {16, 1}, {6, 1}}),
                   S({{4, 1}, {6, 1}, {16, 1}}), S({{4, 2}, {16, 1}, {6, 1}})},
                  "input 3 (w2 [E, F, H]) dim 0 has degree 1 but must have degree 2");
  expect_rejected(Op(OpType::Experts, {{"top_k", std::int64_t{5}}}),
                  {S({{8, 1}, {16, 1}}), S({{8, 1}, {4, 1}}), S({{4, 1}, {16, 1}, {6, 1}}),
                   S({{4, 1}, {6, 1}, {16, 1}}), S({{4, 1}, {16, 1}, {6, 1}})},
                  "top_k 5 is more than the 4 experts");
  // A group limit must leave top_k experts to pick: 2 groups of 2, one kept, holds 2, not 3.
  const std::vector<ParallelTensorShape> four_experts{
      S({{8, 1}, {16, 1}}), S({{8, 1}, {4, 1}}), S({{4, 1}, {16, 1}, {6, 1}}),
      S({{4, 1}, {6, 1}, {16, 1}}), S({{4, 1}, {16, 1}, {6, 1}})};
  auto limited = [](std::int64_t top_k, std::int64_t groups, std::int64_t kept) {
    return Op(OpType::Experts,
              {{"top_k", top_k}, {"route_groups", groups}, {"route_group_top_k", kept}});
  };
  EXPECT_EQ(infer1(limited(2, 2, 1), four_experts).dims[1].size, 16);
  expect_rejected(limited(3, 2, 1), four_experts, "top_k 3 is more than the 2 experts of 1 groups");
  expect_rejected(limited(2, 3, 1), four_experts, "route_groups 3 does not divide the 4 experts");
  expect_rejected(limited(2, 2, 2), four_experts,
                  "route_group_top_k must be 1 to route_groups - 1");
}
