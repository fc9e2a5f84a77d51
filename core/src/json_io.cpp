#include "unity/core/json_io.h"

#include <unistd.h>
#include <cstring>
#include <fstream>
#include <sstream>
#include <type_traits>

#include <absl/strings/escaping.h>
#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity {
namespace {

using nlohmann::json;

constexpr int kModelFormatVersion = 1;

json attr_to_json(const AttrValue& v) {
  struct Visitor {
    json operator()(std::int64_t x) const { return x; }
    json operator()(double x) const { return x; }
    json operator()(const std::string& x) const { return x; }
    json operator()(const std::vector<std::int64_t>& x) const { return x; }
  };
  return std::visit(Visitor{}, v);
}

// A Constant's values as the bytes of its elements (little-endian float32 or int64) in base64:
// a third larger than the bytes, where a list of decimal numbers would be three times larger.
json values_to_json(const TensorValues& v) {
  const char* data = v.is_integer() ? reinterpret_cast<const char*>(v.integers().data())
                                    : reinterpret_cast<const char*>(v.floats().data());
  const std::size_t bytes =
      static_cast<std::size_t>(v.size()) * (v.is_integer() ? sizeof(std::int64_t) : sizeof(float));
  return {{"type", v.is_integer() ? "int64" : "float32"},
          {"base64", absl::Base64Escape(absl::string_view(data, bytes))}};
}

std::shared_ptr<const TensorValues> values_from_json(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string() || !j.contains("base64") ||
      !j["base64"].is_string())
    throw InputError(where + ": field 'values' must be {\"type\": ..., \"base64\": ...}");
  const std::string type = j["type"].get<std::string>();
  std::string bytes;
  if (!absl::Base64Unescape(j["base64"].get<std::string>(), &bytes))
    throw InputError(where + ": field 'values' is not valid base64");
  auto unpack = [&]<typename T>(std::vector<T> out) {
    if (bytes.size() % sizeof(T) != 0)
      throw InputError(fmt::format("{}: {} bytes of values are no whole number of {} elements",
                                   where, bytes.size(), type));
    out.resize(bytes.size() / sizeof(T));
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  };
  if (type == "float32") return TensorValues::of_floats(unpack(std::vector<float>{}));
  if (type == "int64") return TensorValues::of_integers(unpack(std::vector<std::int64_t>{}));
  throw InputError(fmt::format("{}: values of type '{}' (expected float32 or int64)", where, type));
}

AttrValue attr_from_json(const json& j, const std::string& where) {
  if (j.is_number_integer()) return j.get<std::int64_t>();
  if (j.is_number_float()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_array()) {
    std::vector<std::int64_t> v;
    for (const auto& x : j) {
      if (!x.is_number_integer()) throw InputError(where + ": lists may only hold integers");
      v.push_back(x.get<std::int64_t>());
    }
    return v;
  }
  throw InputError(where + ": must be an integer, a number, a string or a list of integers");
}

const json& field(const json& j, const char* name, const std::string& where) {
  if (!j.is_object()) throw InputError(where + " must be a JSON object");
  auto it = j.find(name);
  if (it == j.end()) throw InputError(fmt::format("{}: missing field '{}'", where, name));
  return *it;
}

template <typename T>
T get_as(const json& j, const char* name, const std::string& where) {
  const json& v = field(j, name, where);
  if constexpr (std::is_integral_v<T>) {
    return json_integer<T>(v, fmt::format("{}: field '{}'", where, name));
  } else {
    try {
      return v.get<T>();
    } catch (const json::exception&) {
      throw InputError(
          fmt::format("{}: field '{}' has the wrong type ({})", where, name, v.dump()));
    }
  }
}

}  // namespace

json shape_to_json(const ParallelTensorShape& s) {
  json dims = json::array();
  for (const auto& d : s.dims) dims.push_back({d.size, d.degree});
  return {{"dims", dims}, {"replica", s.replica}, {"dtype", std::string(to_string(s.dtype))}};
}

ParallelTensorShape shape_from_json(const json& j) {
  ParallelTensorShape s;
  const json& dims = field(j, "dims", "shape");
  if (!dims.is_array()) throw InputError("shape: field 'dims' must be a list of [size, degree]");
  for (const auto& d : dims) {
    if (!d.is_array() || d.size() != 2 || !d[0].is_number_integer() || !d[1].is_number_integer())
      throw InputError("shape: each dim must be [size, degree], got " + d.dump());
    s.dims.push_back({json_integer<std::int64_t>(d[0], "shape: a dim's size"),
                      json_integer<int>(d[1], "shape: a dim's degree")});
  }
  s.replica = json_integer_or(j, "replica", 1, "shape");
  s.dtype = data_type_from_string(j.value("dtype", std::string("float32")));
  return s;
}

json graph_to_json(const Graph& g) {
  json nodes = json::array();
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    json attrs = json::object();
    for (const auto& [k, v] : n.op.attrs.items()) attrs[k] = attr_to_json(v);
    json inputs = json::array();
    for (const auto& in : n.inputs) inputs.push_back({in.node, in.index});
    json outputs = json::array();
    for (const auto& s : n.outputs) outputs.push_back(shape_to_json(s));
    json node = {{"id", id},       {"name", n.op.name}, {"op", std::string(to_string(n.op.type))},
                 {"attrs", attrs}, {"inputs", inputs},  {"outputs", outputs}};
    if (n.op.values) node["values"] = values_to_json(*n.op.values);
    nodes.push_back(std::move(node));
  }
  json out = {{"format", "unity-model"},
              {"version", kModelFormatVersion},
              {"name", g.name},
              {"batch_size", g.batch_size},
              {"nodes", nodes}};
  if (!g.source_details.empty()) out["source_details"] = json::parse(g.source_details);
  return out;
}

namespace {

// graph_from_json without its guard: optional fields read with json::value throw json's type_error
// when the file holds another type there.
Graph graph_from_json_fields(const json& j) {
  if (!j.is_object()) throw InputError("model: the top level must be a JSON object");
  const auto format = j.value("format", std::string());
  if (format != "unity-model")
    throw InputError(
        fmt::format("model: field 'format' must be \"unity-model\", got \"{}\"", format));
  const int version = get_as<int>(j, "version", "model");
  if (version > kModelFormatVersion)
    throw InputError(fmt::format("model: format version {} is newer than this Unity reads ({})",
                                 version, kModelFormatVersion));
  Graph g;
  g.name = j.value("name", std::string());
  g.batch_size = json_integer_or(j, "batch_size", std::int64_t{0}, "model");
  if (j.contains("source_details")) {
    if (!j["source_details"].is_object())
      throw InputError("model: field 'source_details' must be an object");
    g.source_details = j["source_details"].dump();
  }
  const json& nodes = field(j, "nodes", "model");
  if (!nodes.is_array()) throw InputError("model: field 'nodes' must be a list");
  std::map<NodeId, std::vector<ParallelTensorShape>> stored;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const json& jn = nodes[i];
    const std::string where = fmt::format("model: nodes[{}]", i);
    const auto id = get_as<NodeId>(jn, "id", where);
    const auto type_name = get_as<std::string>(jn, "op", where);
    auto type = op_type_from_string(type_name);
    if (!type) throw InputError(fmt::format("{}: unknown op '{}'", where, type_name));
    Operator op{*type, {}, jn.value("name", std::string())};
    if (jn.contains("attrs")) {
      const json& attrs = jn["attrs"];
      if (!attrs.is_object()) throw InputError(where + ": field 'attrs' must be an object");
      for (const auto& [k, v] : attrs.items())
        op.attrs.set(k, attr_from_json(v, fmt::format("{}: attribute '{}'", where, k)));
    }
    if (jn.contains("values")) op.values = values_from_json(jn["values"], where);
    std::vector<TensorRef> inputs;
    if (jn.contains("inputs")) {
      for (const auto& in : jn["inputs"]) {
        if (!in.is_array() || in.size() != 2 || !in[0].is_number_integer() ||
            !in[1].is_number_integer())
          throw InputError(where + ": each input must be [node id, output index], got " +
                           in.dump());
        inputs.push_back({in[0].get<NodeId>(), json_integer<int>(in[1], where + ": input index")});
      }
    }
    try {
      g.insert_unchecked(id, std::move(op), std::move(inputs));
    } catch (const GraphError& e) {
      throw InputError(fmt::format("{}: {}", where, e.what()));
    }
    if (jn.contains("outputs")) {
      auto& shapes = stored[id];
      for (const auto& s : jn["outputs"]) shapes.push_back(shape_from_json(s));
    }
  }
  // Every input must name an existing output before shapes can be inferred.
  for (const auto& [id, n] : g.nodes())
    for (const auto& in : n.inputs)
      if (!g.contains(in.node))
        throw GraphError(
            fmt::format("{}: input refers to missing node {}", g.describe(id), in.node));
  g.infer_shapes();
  for (const auto& [id, shapes] : stored) {
    const auto& inferred = g.node(id).outputs;
    if (shapes != inferred)
      throw GraphError(fmt::format("{}: the file says its output is {} but it infers to {}",
                                   g.describe(id),
                                   shapes.empty() ? "nothing" : shapes[0].to_string(),
                                   inferred.empty() ? "nothing" : inferred[0].to_string()));
  }
  return g;
}

}  // namespace

Graph graph_from_json(const json& j) {
  try {
    return graph_from_json_fields(j);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("model: a field has the wrong type or value ({})", e.what()));
  }
}

double json_measured(const json& v) {
  return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
}

std::vector<double> json_measured_list(const json& v) {
  std::vector<double> out;
  for (const auto& x : v) out.push_back(json_measured(x));
  return out;
}

double json_measured_or(const json& j, const char* key, double fallback) {
  const auto it = j.find(key);
  return it == j.end() ? fallback : json_measured(*it);
}

std::int64_t json_integer_in(const json& v, std::string_view what, std::int64_t lowest,
                             std::int64_t highest) {
  const bool fits = v.is_number_integer() &&
                    !(v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(highest)) &&
                    v.get<std::int64_t>() >= lowest && v.get<std::int64_t>() <= highest;
  if (!fits)
    throw InputError(fmt::format("{} must be an integer from {} to {}, got {}", what, lowest,
                                 highest, v.dump()));
  return v.get<std::int64_t>();
}

json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in)
    throw InputError(fmt::format("cannot read '{}': no such file or not readable", path.string()));
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    // Not only parse_error: a number too large for a double ("1e999") is out_of_range.406.
    throw InputError(fmt::format("'{}' is not valid JSON: {}", path.string(), e.what()));
  }
}

void write_text_file_atomic(const std::filesystem::path& path, const std::string& text) {
  auto tmp = path;
  tmp += fmt::format(".tmp{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(fmt::format("cannot write '{}'", path.string()));
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw InputError(fmt::format("cannot write '{}'", path.string()));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw InputError(fmt::format("cannot write '{}': {}", path.string(), ec.message()));
  }
}

}  // namespace unity
