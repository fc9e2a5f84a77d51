// The model JSON format: round trips for every zoo model, and clear errors for bad files.
#include <fstream>

#include <gtest/gtest.h>

#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/zoo/model_zoo.h"

using namespace unity;

namespace {

void expect_same_graph(const Graph& a, const Graph& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.batch_size, b.batch_size);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [id, n] : a.nodes()) {
    ASSERT_TRUE(b.contains(id));
    const Node& m = b.node(id);
    EXPECT_EQ(n.op, m.op) << a.describe(id);
    EXPECT_EQ(n.inputs, m.inputs) << a.describe(id);
    EXPECT_EQ(n.outputs, m.outputs) << a.describe(id);
  }
  EXPECT_EQ(a.structural_hash(), b.structural_hash());
}

std::string load_error(const nlohmann::json& j) {
  try {
    graph_from_json(j);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(JsonIo, RoundTripEveryZooModel) {
  for (const auto& info : zoo::models()) {
    SCOPED_TRACE(info.name);
    const Graph g = zoo::build(info.name);
    const auto text = graph_to_json(g).dump();
    const Graph back = graph_from_json(nlohmann::json::parse(text));
    expect_same_graph(g, back);
    EXPECT_EQ(graph_to_json(back).dump(), text);  // stable: a second trip changes nothing
  }
}

TEST(JsonIo, FloatAttributesStayFloats) {
  Graph g;
  auto x = g.add_input("x", {4, 4});
  g.add(Operator{OpType::Dropout, {{"rate", 0.0}}, "drop"}, {x});
  const Graph back = graph_from_json(graph_to_json(g));
  EXPECT_TRUE(std::holds_alternative<double>(back.node(1).op.attrs.items().at("rate")));
}

TEST(JsonIo, ConstantsKeepTheirValues) {
  Graph g;
  auto x = g.add_input("x", {2, 3});
  auto mask = g.add_constant("mask", {2, 3}, DataType::Float32,
                             TensorValues::of_floats({0.f, -1e9f, 0.5f, -0.f, 3.25f, -7.f}));
  auto positions = g.add_constant("positions", {3}, DataType::Int64,
                                  TensorValues::of_integers({2, -1, 1LL << 40}));
  g.add(Operator{OpType::Add, {}, "masked"}, {x, mask});
  g.add(Operator{OpType::Embedding,
                 {{"num_entries", std::int64_t{4}}, {"embedding_dim", std::int64_t{3}}},
                 "embed"},
        {positions, g.add_weight("table", {4, 3})});
  const auto j = graph_to_json(g);
  EXPECT_EQ(j["nodes"][1]["values"]["type"], "float32");
  const Graph back = graph_from_json(nlohmann::json::parse(j.dump()));
  expect_same_graph(g, back);
  EXPECT_EQ(back.node(mask.node).op.values->floats(),
            (std::vector<float>{0.f, -1e9f, 0.5f, -0.f, 3.25f, -7.f}));
  EXPECT_EQ(back.node(positions.node).op.values->integers(),
            (std::vector<std::int64_t>{2, -1, 1LL << 40}));
  // Values are structure: other values, another hash; a Constant is no parameter.
  Graph other = g;
  other.mutable_node(mask.node).op.values = TensorValues::of_floats({0, 0, 0, 0, 0, 0});
  EXPECT_NE(other.structural_hash(), g.structural_hash());
  EXPECT_FALSE(other.node(mask.node).op == g.node(mask.node).op);
  EXPECT_EQ(g.parameter_count(), 12);

  auto bad = j;
  bad["nodes"][1]["values"]["base64"] = "AAAA";  // 3 bytes: no whole float
  EXPECT_NE(load_error(bad).find("no whole number of float32 elements"), std::string::npos);
  bad = j;
  bad["nodes"][1]["values"]["base64"] = "AAAAAA==";  // one float for six elements
  EXPECT_NE(load_error(bad).find("holds 1 values for a shape of 6 elements"), std::string::npos);
  bad = j;
  bad["nodes"][1]["values"]["type"] = "float64";
  EXPECT_NE(load_error(bad).find("values of type 'float64'"), std::string::npos);
  bad = j;
  bad["nodes"][1].erase("values");
  EXPECT_NE(load_error(bad).find("must hold its values"), std::string::npos);
}

TEST(JsonIo, BadFilesNameTheProblem) {
  const Graph g = zoo::build("mnist-mlp");
  const auto good = graph_to_json(g);

  auto j = good;
  j.erase("format");
  EXPECT_NE(load_error(j).find("'format'"), std::string::npos);

  j = good;
  j["version"] = 99;
  EXPECT_NE(load_error(j).find("newer"), std::string::npos);

  j = good;
  j["nodes"][3]["op"] = "Frobnicate";
  EXPECT_NE(load_error(j).find("unknown op 'Frobnicate'"), std::string::npos);

  j = good;
  j["nodes"][3].erase("id");
  EXPECT_NE(load_error(j).find("nodes[3]: missing field 'id'"), std::string::npos);

  j = good;  // a dangling input
  j["nodes"][3]["inputs"][0] = {12345, 0};
  EXPECT_NE(load_error(j).find("missing node 12345"), std::string::npos);

  j = good;  // stored shape that disagrees with inference
  for (auto& n : j["nodes"])
    if (n["op"] == "Relu") n["outputs"][0]["dims"][0][1] = 2;
  EXPECT_NE(load_error(j).find("infers to"), std::string::npos);

  j = good;  // an attribute that makes shapes invalid
  for (auto& n : j["nodes"])
    if (n["op"] == "Linear") n["attrs"]["out_features"] = 7;
  EXPECT_NE(load_error(j).find("(Linear)"), std::string::npos);
}

TEST(JsonIo, ReadJsonFileErrors) {
  EXPECT_THROW(read_json_file("/nonexistent/model.json"), InputError);
  const auto path = std::filesystem::temp_directory_path() / "unity_bad.json";
  std::ofstream(path) << "{ not json";
  try {
    read_json_file(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos);
  }
  std::filesystem::remove(path);
}

TEST(JsonIo, AtomicWriteLeavesNoPartialFile) {
  EXPECT_THROW(write_text_file_atomic("/nonexistent-dir/x.json", "{}"), InputError);
  const auto path = std::filesystem::temp_directory_path() / "unity_atomic.json";
  write_text_file_atomic(path, "{\"a\": 1}\n");
  EXPECT_EQ(read_json_file(path)["a"], 1);
  std::filesystem::remove(path);
}
