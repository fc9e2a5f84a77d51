#include "onnx/pattern_recognition.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "onnx/constant_folding.h"
#include "onnx/onnx_op_mapping.h"
#include "unity/core/pcg/op_type.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

class Matcher {
 public:
  explicit Matcher(const OnnxModel& model) : m_(model) {}

  // The node that alone reads `value`, when it has this op type.
  std::optional<int> sole(const std::string& value, const std::string& op_type) const {
    const int n = m_.sole_consumer(value);
    if (n < 0 || !is(n, op_type)) return std::nullopt;
    return n;
  }
  bool is(int n, const std::string& op_type) const {
    return n >= 0 && is_default_domain(m_.node(n)) && m_.node(n).op_type() == op_type;
  }
  const ::onnx::NodeProto& node(int n) const { return m_.node(n); }
  const std::string& out(int n) const { return m_.node(n).output(0); }
  // The other operand of a binary node that reads `value`.
  std::string other(int n, const std::string& value) const {
    const auto& nd = m_.node(n);
    if (nd.input_size() != 2) return {};
    if (nd.input(0) == value) return nd.input(1);
    if (nd.input(1) == value) return nd.input(0);
    return {};
  }
  std::optional<double> scalar(const std::string& value) const {
    if (value.empty()) return std::nullopt;
    auto dims = m_.static_dims(value);
    if (!dims || product(*dims) != 1) return std::nullopt;
    // Static dims need not come with a value (a Constant without one), nor a value with its
    // element (a malformed initializer): neither is a scalar to match.
    const auto v = m_.static_value(value);
    if (!v || (v->is_integer() ? v->ints.empty() : v->floats.empty())) return std::nullopt;
    return v->as_double(0);
  }
  bool scalar_near(const std::string& value, double expected) const {
    auto v = scalar(value);
    return v && std::abs(*v - expected) <= 1e-3 * std::max(1.0, std::abs(expected));
  }
  // ReduceMean axes and keepdims; nullopt when keepdims is 0 or the axes are computed.
  std::optional<Ints> reduce_axes(int n) const {
    const auto& nd = m_.node(n);
    if (attr_int(nd, "keepdims", 1) == 0) return std::nullopt;
    if (auto attr = attr_ints(nd, "axes")) return attr;
    if (nd.input_size() > 1 && !nd.input(1).empty()) {
      if (auto v = m_.static_value(nd.input(1))) return v->to_ints();
    }
    return std::nullopt;
  }
  // Only the first output of the node is read (BatchNormalization's statistics are not).
  bool only_first_output_used(int n) const {
    const auto& nd = m_.node(n);
    for (int i = 1; i < nd.output_size(); ++i) {
      if (!nd.output(i).empty() &&
          (!m_.consumers(nd.output(i)).empty() || m_.is_graph_output(nd.output(i)))) {
        return false;
      }
    }
    return true;
  }
  const OnnxModel& model() const { return m_; }

 private:
  const OnnxModel& m_;
};

// Exporters name nodes by module path ("/layers.0/norm1/ReduceMean"): the fused operator takes the
// path its nodes share plus its own type ("/layers.0/norm1/LayerNorm"), or the first node's name.
std::string fused_name(const OnnxModel& model, const std::vector<int>& nodes,
                       const std::string& type) {
  std::string prefix = node_name(model.node(nodes.front()));
  for (int n : nodes) {
    const std::string name = node_name(model.node(n));
    std::size_t common = 0;
    while (common < prefix.size() && common < name.size() && prefix[common] == name[common])
      ++common;
    prefix.resize(common);
  }
  const auto slash = prefix.rfind('/');
  if (slash == std::string::npos) return node_name(model.node(nodes.front()));
  return prefix.substr(0, slash + 1) + type;
}

std::optional<PatternMatch> match_layer_norm(const Matcher& m, int root) {
  if (!m.is(root, "ReduceMean")) return std::nullopt;
  const std::string& x = m.node(root).input(0);
  auto axes = m.reduce_axes(root);
  if (!axes) return std::nullopt;
  auto sub = m.sole(m.out(root), "Sub");
  if (!sub || m.node(*sub).input(0) != x || m.node(*sub).input(1) != m.out(root))
    return std::nullopt;
  // The centred value feeds the variance (Pow) and the normalisation (Div), and nothing else.
  const std::string& centred = m.out(*sub);
  const auto& uses = m.model().consumers(centred);
  if (uses.size() != 2 || m.model().is_graph_output(centred)) return std::nullopt;
  int pow = -1, div = -1;
  for (const auto& use : uses) {
    if (m.is(use.node, "Pow") && use.slot == 0) pow = use.node;
    if (m.is(use.node, "Div") && use.slot == 0) div = use.node;
  }
  if (pow < 0 || div < 0 || !m.scalar_near(m.node(pow).input(1), 2.0)) return std::nullopt;
  auto variance = m.sole(m.out(pow), "ReduceMean");
  if (!variance || m.reduce_axes(*variance) != axes) return std::nullopt;
  auto add_eps = m.sole(m.out(*variance), "Add");
  if (!add_eps) return std::nullopt;
  const auto eps = m.scalar(m.other(*add_eps, m.out(*variance)));
  if (!eps) return std::nullopt;
  auto sqrt = m.sole(m.out(*add_eps), "Sqrt");
  if (!sqrt || m.sole(m.out(*sqrt), "Div") != div || m.node(div).input(1) != m.out(*sqrt))
    return std::nullopt;

  PatternMatch match;
  match.kind = PatternMatch::Kind::LayerNorm;
  match.nodes = {root, *sub, pow, *variance, *add_eps, *sqrt, div};
  match.input = x;
  match.output = m.out(div);
  match.axes = *axes;
  match.epsilon = *eps;
  // The affine part: Mul by a constant gamma, then Add of a constant beta. Our LayerNorm takes
  // both or neither, so a lone gamma stays a Mul after an affine-free LayerNorm.
  if (auto mul = m.sole(m.out(div), "Mul")) {
    const std::string gamma = m.other(*mul, m.out(div));
    auto add = m.sole(m.out(*mul), "Add");
    if (m.model().is_static(gamma) && add) {
      const std::string beta = m.other(*add, m.out(*mul));
      if (m.model().is_static(beta)) {
        match.gamma = gamma;
        match.beta = beta;
        match.nodes.push_back(*mul);
        match.nodes.push_back(*add);
        match.output = m.out(*add);
      }
    }
  }
  match.name = fused_name(m.model(), match.nodes, "LayerNorm");
  return match;
}

// RMSNorm as Llama's code writes it: x * rsqrt(mean(x^2) + eps) * gamma. rsqrt exports as
// Reciprocal or Div(1, .) of Sqrt and the product as Mul; x / sqrt(...) is the Div form. Our
// RMSNorm always has a gamma, so the form without one stays in pieces.
std::optional<PatternMatch> match_rms_norm(const Matcher& m, int pow) {
  if (!m.is(pow, "Pow") || !m.scalar_near(m.node(pow).input(1), 2.0)) return std::nullopt;
  const std::string& x = m.node(pow).input(0);
  auto mean = m.sole(m.out(pow), "ReduceMean");
  if (!mean) return std::nullopt;
  auto axes = m.reduce_axes(*mean);
  if (!axes) return std::nullopt;
  auto add_eps = m.sole(m.out(*mean), "Add");
  if (!add_eps) return std::nullopt;
  const auto eps = m.scalar(m.other(*add_eps, m.out(*mean)));
  if (!eps) return std::nullopt;
  auto sqrt = m.sole(m.out(*add_eps), "Sqrt");
  if (!sqrt) return std::nullopt;
  PatternMatch match;
  match.nodes = {pow, *mean, *add_eps, *sqrt};
  const std::string& root = m.out(*sqrt);
  const int reader = m.model().sole_consumer(root);
  int normalised = -1;  // the node whose output is x / rms(x)
  if (m.is(reader, "Div") && m.node(reader).input(0) == x && m.node(reader).input(1) == root) {
    normalised = reader;
  } else {
    int inverse = -1;
    if (m.is(reader, "Reciprocal"))
      inverse = reader;
    else if (m.is(reader, "Div") && m.node(reader).input(1) == root &&
             m.scalar_near(m.node(reader).input(0), 1.0))
      inverse = reader;
    if (inverse < 0) return std::nullopt;
    auto times_x = m.sole(m.out(inverse), "Mul");
    if (!times_x || m.other(*times_x, m.out(inverse)) != x) return std::nullopt;
    match.nodes.push_back(inverse);
    normalised = *times_x;
  }
  match.nodes.push_back(normalised);
  auto scale = m.sole(m.out(normalised), "Mul");
  if (!scale) return std::nullopt;
  const std::string gamma = m.other(*scale, m.out(normalised));
  if (gamma.empty() || !m.model().is_static(gamma)) return std::nullopt;
  match.nodes.push_back(*scale);
  match.kind = PatternMatch::Kind::RmsNorm;
  match.input = x;
  match.output = m.out(*scale);
  match.axes = *axes;
  match.epsilon = *eps;
  match.gamma = gamma;
  match.name = fused_name(m.model(), match.nodes, "RMSNorm");
  return match;
}

// Erf(x / sqrt 2) or Erf(x * (1 / sqrt 2)), then + 1, times x, times 0.5.
std::optional<PatternMatch> match_gelu(const Matcher& m, int erf) {
  if (!m.is(erf, "Erf")) return std::nullopt;
  const int scale = m.model().producer(m.node(erf).input(0));
  if (scale < 0 || m.model().sole_consumer(m.out(scale)) != erf) return std::nullopt;
  std::string x;
  if (m.is(scale, "Div") && m.scalar_near(m.node(scale).input(1), std::sqrt(2.0))) {
    x = m.node(scale).input(0);
  } else if (m.is(scale, "Mul")) {
    for (int side = 0; side < 2; ++side) {
      if (m.scalar_near(m.node(scale).input(side), 1.0 / std::sqrt(2.0)))
        x = m.node(scale).input(1 - side);
    }
  }
  if (x.empty()) return std::nullopt;
  auto plus_one = m.sole(m.out(erf), "Add");
  if (!plus_one || !m.scalar_near(m.other(*plus_one, m.out(erf)), 1.0)) return std::nullopt;
  auto mul = m.sole(m.out(*plus_one), "Mul");
  if (!mul) return std::nullopt;
  PatternMatch match;
  match.kind = PatternMatch::Kind::Gelu;
  match.input = x;
  const std::string partner = m.other(*mul, m.out(*plus_one));
  if (partner == x) {
    // (x * (1 + erf)) * 0.5
    auto half = m.sole(m.out(*mul), "Mul");
    if (!half || !m.scalar_near(m.other(*half, m.out(*mul)), 0.5)) return std::nullopt;
    match.nodes = {scale, erf, *plus_one, *mul, *half};
    match.output = m.out(*half);
  } else {
    // (x * 0.5) * (1 + erf)
    const int half = m.model().producer(partner);
    if (!m.is(half, "Mul") || m.model().sole_consumer(partner) != *mul) return std::nullopt;
    const std::string half_other = m.other(half, x);
    if (half_other.empty() || !m.scalar_near(half_other, 0.5)) return std::nullopt;
    match.nodes = {half, scale, erf, *plus_one, *mul};
    match.output = m.out(*mul);
  }
  match.name = fused_name(m.model(), match.nodes, "Gelu");
  return match;
}

std::optional<PatternMatch> match_linear_bias(const Matcher& m, int matmul) {
  if (!m.is(matmul, "MatMul")) return std::nullopt;
  const std::string& weight = m.node(matmul).input(1);
  const auto wdims = m.model().static_dims(weight);
  if (!wdims || wdims->size() != 2 || m.model().is_static(m.node(matmul).input(0)))
    return std::nullopt;
  auto add = m.sole(m.out(matmul), "Add");
  if (!add) return std::nullopt;
  const std::string bias = m.other(*add, m.out(matmul));
  const auto bdims = m.model().static_dims(bias);
  if (!bdims || *bdims != Ints{(*wdims)[1]}) return std::nullopt;
  PatternMatch match;
  match.kind = PatternMatch::Kind::LinearBias;
  match.nodes = {matmul, *add};
  match.input = m.node(matmul).input(0);
  match.output = m.out(*add);
  match.weight = weight;
  match.bias = bias;
  match.name = fused_name(m.model(), match.nodes, "Linear");
  return match;
}

std::optional<PatternMatch> match_conv_batch_norm(const Matcher& m, int conv) {
  if (!m.is(conv, "Conv")) return std::nullopt;
  auto bn = m.sole(m.out(conv), "BatchNormalization");
  if (!bn || !m.only_first_output_used(*bn)) return std::nullopt;
  const auto& bn_node = m.node(*bn);
  for (int i = 1; i < 5; ++i) {
    if (bn_node.input_size() <= i || !m.model().is_static(bn_node.input(i))) return std::nullopt;
  }
  PatternMatch match;
  match.kind = PatternMatch::Kind::ConvBatchNorm;
  match.nodes = {conv, *bn};
  match.input = m.node(conv).input(0);
  match.output = m.out(*bn);
  match.conv_node = conv;
  // The folded bias is one [out_channels] vector: the conv's own bias when it has one (its values
  // change, its shape does not), else the BatchNorm's shift.
  match.bias = input_name(m.node(conv), 2).empty() ? bn_node.input(2) : m.node(conv).input(2);
  match.name = node_name(m.node(conv));
  return match;
}

// Static parameters are read by name; the nodes that define them (Identity, Constant) may come
// later in the file than the pattern's first node, so bind them now when they are not known yet.
void ensure_static(ImportContext& ctx, const std::string& value) {
  if (value.empty() || ctx.known(value)) return;
  if (const auto* tensor = ctx.model().static_tensor(value))
    ctx.bind_initializer(value, tensor, ctx.model().initializer(tensor->name()) == tensor);
  else if (auto constant = ctx.model().static_value(value))
    ctx.bind_constant(value, std::move(*constant));
}

}  // namespace

std::map<int, PatternMatch> find_patterns(const OnnxModel& model) {
  const Matcher m(model);
  std::map<int, PatternMatch> matches;
  std::set<int> claimed;
  for (int n = 0; n < model.node_count(); ++n) {
    for (auto matcher :
         {match_layer_norm, match_rms_norm, match_gelu, match_linear_bias, match_conv_batch_norm}) {
      auto match = matcher(m, n);
      if (!match) continue;
      if (std::any_of(match->nodes.begin(), match->nodes.end(),
                      [&](int i) { return claimed.count(i) != 0; })) {
        continue;
      }
      claimed.insert(match->nodes.begin(), match->nodes.end());
      const int first = *std::min_element(match->nodes.begin(), match->nodes.end());
      matches.emplace(first, std::move(*match));
    }
  }
  return matches;
}

bool emit_pattern(ImportContext& ctx, const PatternMatch& match) {
  // Every pattern reads one activation; a constant input means the nodes fold instead.
  if (!ctx.is_tensor(match.input)) return false;
  for (const std::string* value : {&match.gamma, &match.beta, &match.weight, &match.bias}) {
    ensure_static(ctx, *value);
  }
  if (match.kind == PatternMatch::Kind::ConvBatchNorm) {
    const auto& conv = ctx.model().node(match.conv_node);
    ensure_static(ctx, input_name(conv, 1));
    ensure_static(ctx, input_name(conv, 2));
  }
  const TensorRef x = ctx.tensor(match.input);
  const Ints sizes = ctx.sizes(x);
  const auto rank = static_cast<std::int64_t>(sizes.size());
  TensorRef out;
  switch (match.kind) {
    case PatternMatch::Kind::LayerNorm:
    case PatternMatch::Kind::RmsNorm: {
      std::set<std::int64_t> axes;
      for (auto a : match.axes) {
        if (a < -rank || a >= rank) return false;
        axes.insert(a < 0 ? a + rank : a);
      }
      const auto count = static_cast<std::int64_t>(axes.size());
      if (count == 0 || *axes.begin() != rank - count || *axes.rbegin() != rank - 1) return false;
      const Ints normalized(sizes.end() - count, sizes.end());
      std::vector<TensorRef> inputs{x};
      for (const std::string* param : {&match.gamma, &match.beta}) {
        if (param->empty()) break;
        // gamma and beta may be stored as [1, 1, D]; the LayerNorm wants the normalised shape.
        if (product(ctx.dims(*param)) != product(normalized)) return false;
        inputs.push_back(ctx.weight(*param, normalized));
      }
      if (static_cast<int>(inputs.size()) < op_info(OpType::LayerNorm).min_inputs) return false;
      Attributes attrs{{"normalized_dims", count}, {"epsilon", match.epsilon}};
      if (match.kind == PatternMatch::Kind::RmsNorm) attrs.set("rms", std::int64_t{1});
      out = ctx.add(OpType::LayerNorm, std::move(attrs), inputs, match.name);
      break;
    }
    case PatternMatch::Kind::Gelu:
      out = ctx.add(OpType::Gelu, {}, {x}, match.name);
      break;
    case PatternMatch::Kind::LinearBias: {
      const std::int64_t n = ctx.dims(match.weight).at(1);
      out = ctx.add(OpType::Linear, {{"out_features", n}},
                    {x, ctx.tensor(match.weight), ctx.weight(match.bias, {n})}, match.name);
      break;
    }
    case PatternMatch::Kind::ConvBatchNorm:
      if (rank != 4) return false;
      out = emit_conv2d(ctx, ctx.model().node(match.conv_node), match.bias);
      break;
  }
  for (int n : match.nodes) ctx.cover(n);
  ctx.bind_tensor(match.output, out);
  return true;
}

}  // namespace unity::onnxio
