// A decoder's shape read off its serial PCG (model_shape.h). The walk goes by operator kinds and
// wiring, so a decoder imported from ONNX reads as one built by the zoo: the attention layers give
// the heads and the sequence, the loss's Linear the vocabulary, the Linears that read the hidden
// state the FFN width, and how many of those a layer has whether its MLP is gated.
#include "unity/core/plan/model_shape.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/hf/hf_config.h"
#include "unity/core/json_io.h"
#include "unity/core/pcg/tied_weights.h"

namespace unity {
namespace {

using nlohmann::json;

std::int64_t size_at(const Graph& g, TensorRef t, int dim) {
  const auto& s = g.shape(t);
  return dim < s.rank() ? s.dims[static_cast<std::size_t>(dim)].size : 0;
}

// The Weight a node reads in input `slot`, or nullptr.
const Node* weight_input(const Graph& g, const Node& n, std::size_t slot) {
  if (slot >= n.inputs.size()) return nullptr;
  const Node& w = g.node(n.inputs[slot].node);
  return w.op.type == OpType::Weight ? &w : nullptr;
}

}  // namespace

std::int64_t MoeShape::moe_layers() const { return std::count(layers.begin(), layers.end(), 1); }

std::int64_t MoeShape::dense_layers() const {
  return static_cast<std::int64_t>(layers.size()) - moe_layers();
}

std::string python_list_expression(const std::vector<int>& flags) {
  std::vector<std::string> runs;
  for (std::size_t i = 0; i < flags.size();) {
    std::size_t j = i;
    while (j < flags.size() && flags[j] == flags[i]) ++j;
    runs.push_back(fmt::format("[{}]*{}", flags[i], j - i));
    i = j;
  }
  return fmt::format("({})", fmt::join(runs, "+"));
}

std::string MoeShape::layer_freq() const {
  return dense_layers() == 0 ? "1" : python_list_expression(layers);
}

namespace {

// The router feeding an Experts node's gates (graph_builder.h's moe_router): the scatter of the
// picked scores, the TopK, the Softmax or Sigmoid and the Linear scoring the experts. Sets the
// score function and the renormalisation; nullptr (with `why`) where the gates come otherwise.
const Node* router_linear(const Graph& g, const Node& experts, MoeShape& m, NodeId& score_id,
                          std::string& why) {
  const Node& scatter = g.node(experts.inputs.at(1).node);
  if (scatter.op.type != OpType::ScatterElements || scatter.inputs.size() != 3) {
    why = fmt::format("the gates of {} are not a router's top-k scores", g.describe(experts.id));
    return nullptr;
  }
  const Node& topk = g.node(scatter.inputs[1].node);
  const Node& picked = g.node(scatter.inputs[2].node);
  const Node& score = g.node(topk.inputs.at(0).node);
  if (topk.op.type != OpType::TopK ||
      (score.op.type != OpType::Softmax && score.op.type != OpType::Sigmoid) ||
      g.node(score.inputs.at(0).node).op.type != OpType::Linear) {
    why = fmt::format("the router of {} is not a Linear, a softmax or sigmoid and a top-k",
                      g.describe(experts.id));
    return nullptr;
  }
  m.sigmoid = score.op.type == OpType::Sigmoid;
  score_id = score.id;
  m.normalize_top_k = picked.op.type == OpType::Div;
  return &g.node(score.inputs[0].node);
}

std::optional<ModelShape> read_shape(const Graph& g, std::string* why) {
  const auto fail = [&](const std::string& reason) -> std::optional<ModelShape> {
    if (why) *why = reason;
    return std::nullopt;
  };
  // In topological order, so that each layer's attention comes before its MLP's experts.
  std::vector<const Node*> attention, embeddings, linears, norms, adds, experts;
  std::vector<int> layer_has_experts;
  const Node* loss = nullptr;
  int gelus = 0;
  std::set<NodeId> sigmoids;
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    switch (n.op.type) {
      case OpType::MultiHeadAttention:
      case OpType::LatentAttention:
        attention.push_back(&n);
        layer_has_experts.push_back(0);
        break;
      case OpType::Experts:
        if (layer_has_experts.empty() || layer_has_experts.back())
          return fail(fmt::format("{} is not the MLP of an attention layer", g.describe(id)));
        experts.push_back(&n);
        layer_has_experts.back() = 1;
        break;
      case OpType::Embedding:
        embeddings.push_back(&n);
        break;
      case OpType::Linear:
        linears.push_back(&n);
        break;
      case OpType::LayerNorm:
        norms.push_back(&n);
        break;
      case OpType::Add:
        adds.push_back(&n);
        break;
      case OpType::Gelu:
        ++gelus;
        break;
      case OpType::Sigmoid:
        sigmoids.insert(id);
        break;
      case OpType::SoftmaxCrossEntropy:
        loss = &n;
        break;
      case OpType::Conv2D:
      case OpType::ConvTranspose:
      case OpType::EmbeddingBag:
        return fail(fmt::format("it has {} operators", to_string(n.op.type)));
      default:
        break;
    }
  }
  if (attention.empty()) return fail("it has no self-attention layers");
  if (!loss)
    return fail("it has no cross-entropy loss over a vocabulary (a language model's head)");
  ModelShape s;
  const Node& first = *attention.front();
  const bool latent = first.op.type == OpType::LatentAttention;
  s.layers = static_cast<std::int64_t>(attention.size());
  s.hidden = size_at(g, first.inputs[0], 2);
  s.seq = size_at(g, first.inputs[0], 1);
  s.heads = first.op.attrs.get_int("num_heads");
  if (latent) {
    LatentAttentionShape a;
    a.qk_head_dim = first.op.attrs.get_int("qk_nope_head_dim");
    a.qk_rope_head_dim = first.op.attrs.get_int("qk_rope_head_dim");
    a.v_head_dim = first.op.attrs.get_int("v_head_dim");
    // The latents' widths are the norms' (latent_attention.h: q_norm [q_lora] when queries are
    // compressed, kv_norm [kv_lora]): eight inputs with a query latent, six without.
    const bool compressed = first.inputs.size() == 8;
    if (compressed) a.q_lora_rank = size_at(g, first.inputs[2], 0);
    a.kv_lora_rank = size_at(g, first.inputs[compressed ? 5 : 3], 0);
    s.kv_heads = s.heads;
    s.head_dim = a.v_head_dim;
    s.rotary = true;  // the decoupled rotary part
    s.mla = a;
  } else {
    s.kv_heads = first.op.attrs.get_int("num_kv_heads", s.heads);
    s.head_dim = first.op.attrs.get_int("head_dim", s.heads > 0 ? s.hidden / s.heads : 0);
    s.rotary = first.op.attrs.get_int("rotary", 0) != 0;
  }
  if (s.heads <= 0 || s.kv_heads <= 0 || s.hidden <= 0 || s.seq <= 0)
    return fail("its attention has no heads or no width");
  // An imported rotary attention keeps its base (rotary_base, left out at 10000: then not given).
  if (s.rotary) s.rope_theta = first.op.attrs.get_double("rotary_base", 0.0);
  const auto attrs_of = [](const Node& a) {
    std::vector<std::int64_t> out;
    for (const char* k : {"num_heads", "num_kv_heads", "head_dim", "rotary", "qk_nope_head_dim",
                          "qk_rope_head_dim", "v_head_dim"})
      out.push_back(a.op.attrs.get_int(k, -1));
    return out;
  };
  for (const Node* a : attention) {
    if (a->op.type != first.op.type)
      return fail("it mixes multi-head and multi-head latent attention");
    if (!latent && (a->inputs[0] != a->inputs[1] || a->inputs[0] != a->inputs[2]))
      return fail(fmt::format("{} is not self-attention", g.describe(a->id)));
    if (a->op.attrs.get_int("causal", 0) == 0)
      return fail(fmt::format("{} is not causal (an encoder's attention, not a decoder's)",
                              g.describe(a->id)));
    if (attrs_of(*a) != attrs_of(first) || a->inputs.size() != first.inputs.size() ||
        (latent && (size_at(g, a->inputs[2], 0) != size_at(g, first.inputs[2], 0) ||
                    size_at(g, a->inputs[3], 0) != size_at(g, first.inputs[3], 0) ||
                    size_at(g, a->inputs[5], 0) != size_at(g, first.inputs[5], 0))) ||
        a->op.attrs.get_double("rotary_base", 0.0) !=
            first.op.attrs.get_double("rotary_base", 0.0) ||
        size_at(g, a->inputs[0], 2) != s.hidden)
      return fail("its attention layers differ in heads, head size or width");
  }
  // Sliding windows (MultiHeadAttention's "window"): one width, on the layers that have it; the
  // list only where some layers attend in full.
  for (const Node* a : attention) {
    const std::int64_t window = a->op.attrs.get_int("window", 0);
    if (window > 0 && s.sliding_window > 0 && window != s.sliding_window)
      return fail("its attention layers differ in their sliding windows");
    if (window > 0) s.sliding_window = window;
    s.window_layers.push_back(window > 0 ? 1 : 0);
  }
  if (std::count(s.window_layers.begin(), s.window_layers.end(), 0) == 0 || s.sliding_window == 0)
    s.window_layers.clear();
  // Mixture-of-experts layers: the experts' shape, their routers, and the shared experts' MLP (a
  // dense MLP whose down projection is added to the experts' output).
  std::set<const Node*> routers, shared_downs;
  std::set<NodeId> router_scores;
  if (!experts.empty()) {
    MoeShape m;
    const Node& e0 = *experts.front();
    m.experts = size_at(g, e0.inputs.at(2), 0);
    m.expert_ffn = size_at(g, e0.inputs.at(2), 2);
    m.top_k = e0.op.attrs.get_int("top_k");
    m.gated = e0.op.attrs.get_string("mlp", "swiglu") == "swiglu";
    m.route_groups = e0.op.attrs.get_int("route_groups", 0);
    m.route_group_top_k = e0.op.attrs.get_int("route_group_top_k", 0);
    m.layers = layer_has_experts;
    for (const Node* e : experts) {
      MoeShape r;
      std::string reason;
      NodeId score = -1;
      const Node* router = router_linear(g, *e, r, score, reason);
      if (!router) return fail(reason);
      if (routers.empty()) {
        m.sigmoid = r.sigmoid;
        m.normalize_top_k = r.normalize_top_k;
      }
      routers.insert(router);
      router_scores.insert(score);
      if (size_at(g, e->inputs.at(2), 0) != m.experts ||
          size_at(g, e->inputs.at(2), 2) != m.expert_ffn ||
          e->op.attrs.get_int("top_k") != m.top_k ||
          (e->op.attrs.get_string("mlp", "swiglu") == "swiglu") != m.gated ||
          e->op.attrs.get_int("route_groups", 0) != m.route_groups ||
          e->op.attrs.get_int("route_group_top_k", 0) != m.route_group_top_k ||
          r.sigmoid != m.sigmoid || r.normalize_top_k != m.normalize_top_k)
        return fail("its mixture-of-experts layers differ in experts, width, top-k or router");
    }
    // The routers' Sigmoids are no MLP's activation.
    for (NodeId id : router_scores) sigmoids.erase(id);
    std::set<NodeId> expert_ids;
    for (const Node* e : experts) expert_ids.insert(e->id);
    for (const Node* a : adds) {
      if (a->inputs.size() != 2) continue;
      for (int side = 0; side < 2; ++side)
        if (expert_ids.count(a->inputs[side].node)) {
          const Node& other = g.node(a->inputs[1 - side].node);
          if (other.op.type == OpType::Linear && weight_input(g, other, 1)) {
            shared_downs.insert(&other);
            const std::int64_t width = size_at(g, weight_input(g, other, 1)->output(), 0);
            if (m.shared_ffn != 0 && m.shared_ffn != width)
              return fail("its shared experts differ in width");
            m.shared_ffn = width;
          }
        }
    }
    if (!shared_downs.empty() && static_cast<std::int64_t>(shared_downs.size()) != m.moe_layers())
      return fail("some of its mixture-of-experts layers have shared experts, others not");
    s.moe = m;
  }
  // The head: the Linear whose logits the loss reads.
  const Node& head = g.node(loss->inputs.at(0).node);
  if (head.op.type != OpType::Linear) return fail("its loss does not read a Linear head");
  s.vocab = size_at(g, head.output(), 2);
  if (s.vocab <= 0) return fail("its head's logits are not [batch, sequence, vocabulary]");
  // Embeddings: the token table (as many rows as the head's classes) and a learned position one.
  const Node* token = nullptr;
  for (const Node* e : embeddings) {
    if (e->op.attrs.get_int("embedding_dim", 0) != s.hidden)
      return fail(fmt::format("{} is not {} wide", g.describe(e->id), s.hidden));
    if (!token && e->op.attrs.get_int("num_entries", 0) == s.vocab)
      token = e;
    else if (s.positions == 0)
      s.positions = e->op.attrs.get_int("num_entries", 0);
    else
      return fail("it has more embeddings than a token and a position table");
  }
  if (!token) return fail("it has no token embedding as large as its head's vocabulary");
  if (s.rotary == (s.positions > 0))
    return fail(s.rotary ? "it has rotary and learned positions" : "it has no positions");
  // The MLPs: the Linears other than the head and the routers that read the hidden state (up,
  // and gate) and the ones that write it (down); the shared experts' among them.
  std::map<std::int64_t, int> widths;  // output width -> Linears reading the hidden state
  int downs = 0;
  for (const Node* l : linears) {
    if (l == &head || routers.count(l)) continue;
    const Node* w = weight_input(g, *l, 1);
    if (!w) return fail(fmt::format("{} has no weight of its own", g.describe(l->id)));
    const std::int64_t in = size_at(g, w->output(), 0), out = size_at(g, w->output(), 1);
    if (in == s.hidden && out != s.hidden)
      ++widths[out];
    else if (out == s.hidden && in != s.hidden)
      ++downs;
    else
      return fail(fmt::format("{} is not an MLP's [{}, ffn] or [ffn, {}] layer", g.describe(l->id),
                              s.hidden, s.hidden));
    if (weight_input(g, *l, 2)) s.mlp_bias = true;
  }
  const std::int64_t moe_layers = s.moe ? s.moe->moe_layers() : 0;
  const std::int64_t dense_layers = s.layers - moe_layers;
  // The dense MLPs (and the shared experts') are gated where their up projections come in pairs.
  const auto gated_count = [&](std::int64_t mlps, int ups) {
    if (ups == mlps) return std::optional<bool>(false);
    if (ups == 2 * mlps) return std::optional<bool>(true);
    return std::optional<bool>();
  };
  std::optional<bool> gated;  // of the shared experts' MLPs
  if (s.moe && s.moe->shared_ffn > 0) {
    const std::int64_t shared = s.moe->shared_ffn;
    const int ups = widths.count(shared) ? widths[shared] : 0;
    if (dense_layers > 0 && widths.size() == 1) {
      // The dense layers' width is the shared experts': every layer has one MLP of it.
      gated = gated_count(s.layers, ups);
      if (gated) widths[shared] = static_cast<int>(dense_layers * (*gated ? 2 : 1));
    } else {
      gated = gated_count(moe_layers, ups);
      widths.erase(shared);
    }
    if (!gated) return fail("its shared experts are not one MLP each");
    downs -= static_cast<int>(moe_layers);
  }
  if (dense_layers > 0) {
    if (widths.size() != 1) return fail("its layers do not have one MLP width");
    s.ffn = widths.begin()->first;
    const auto dense_gated = gated_count(dense_layers, widths.begin()->second);
    if (downs != dense_layers || !dense_gated) return fail("its layers do not have one MLP each");
    if (gated && *gated != *dense_gated)
      return fail("its shared experts and dense MLPs differ in gating");
    gated = dense_gated;
  } else {
    if (!widths.empty() || downs != 0) return fail("its layers do not have one MLP each");
    s.ffn = s.moe->expert_ffn;
  }
  s.gated_mlp = gated ? *gated : s.moe->gated;
  if (s.moe && s.moe->gated != s.gated_mlp)
    return fail("its experts and dense MLPs differ in gating");
  if (gelus > 0)
    s.activation = "gelu";
  else if (s.gated_mlp && (!sigmoids.empty() || (s.moe && !gated)))
    s.activation = "silu";  // SiLU nodes, or SwiGLU experts alone
  else if (!s.gated_mlp && s.moe && !gated)
    s.activation = "gelu";  // GELU experts alone
  else
    return fail("its MLP's activation is neither GELU nor SiLU");
  // Norms: two a layer and a final one (four a layer with Gemma's sandwich norms), RMS or not.
  if (norms.empty()) return fail("it has no normalisation layers");
  s.rms_norm = norms.front()->op.attrs.get_int("rms", 0) != 0;
  std::set<TensorRef> normed;
  for (const Node* n : norms) {
    if ((n->op.attrs.get_int("rms", 0) != 0) != s.rms_norm)
      return fail("it mixes RMSNorm and LayerNorm");
    if (!normed.insert(n->inputs.at(0)).second) s.parallel_residual = true;
  }
  const auto count = static_cast<std::int64_t>(norms.size());
  if (count == 4 * s.layers + 1)
    s.sandwich_norms = true;
  else if (count == s.layers + 1)  // one norm a layer, both branches reading it (Phi)
    s.parallel_residual = s.shared_parallel_norm = true;
  else if (count != 2 * s.layers + 1)
    return fail("its layers do not have a norm before the attention and the MLP");
  // Two a layer that read the attentions' outputs: after each block, none before (OLMo 2).
  else
    s.post_norms = std::any_of(norms.begin(), norms.end(), [&](const Node* n) {
      const OpType from = g.node(n->inputs.at(0).node).op.type;
      return from == OpType::MultiHeadAttention || from == OpType::LatentAttention;
    });
  // A bias after each attention's output projection: an Add of a [hidden] weight.
  int attention_biases = 0;
  for (const Node* a : adds)
    for (std::size_t slot = 0; slot < a->inputs.size(); ++slot)
      if (const Node* w = weight_input(g, *a, slot); w && g.shape(w->output()).rank() == 1)
        ++attention_biases;
  s.attention_bias = attention_biases == s.layers;
  s.tied = !tied_copies(g).empty();
  return s;
}

// A Hugging Face config's details (what its graph's operators do not hold), as the "hf" object
// of a model shape and of a graph's source_details.
json hf_details_json(const ModelShape& s) {
  return {{"architecture", s.hf_architecture},
          {"name", s.hf_name},
          {"rope_theta", s.rope_theta},
          {"rotary_fraction", s.rotary_fraction},
          {"rope_scaling", s.rope_scaling},
          {"rope_scaling_params", s.rope_scaling_params},
          {"qkv_bias", s.qkv_bias},
          {"qk_norm", s.qk_norm},
          {"qk_norm_whole", s.qk_norm_whole},
          {"head_bias", s.head_bias},
          {"multipliers", s.multipliers},
          {"shared_expert_gate", s.shared_expert_gate},
          {"max_positions", s.max_positions},
          {"expert_bias", s.expert_bias},
          {"router_score_correction", s.router_score_correction},
          {"attention_chunk", s.attention_chunk},
          {"nope_layers", s.nope_layers},
          {"nope_interval", s.nope_interval},
          {"qk_l2_norm", s.qk_l2_norm},
          {"router_probs_on_input", s.router_probs_on_input}};
}

void read_hf_details(ModelShape& s, const json& h, const std::string& where) {
  if (!h.is_object()) throw InputError(fmt::format("{}.hf must be an object", where));
  s.hf_architecture = h.value("architecture", "");
  s.hf_name = h.value("name", "");
  s.rope_theta = h.value("rope_theta", 0.0);
  s.rotary_fraction = h.value("rotary_fraction", 1.0);
  s.rope_scaling = h.value("rope_scaling", "");
  if (h.contains("rope_scaling_params")) {
    const json& params = h["rope_scaling_params"];
    if (!params.is_object())
      throw InputError(fmt::format("{}.hf.rope_scaling_params must be an object", where));
    for (const auto& [key, value] : params.items()) {
      if (!value.is_number())
        throw InputError(fmt::format("{}.hf.rope_scaling_params.{} must be a number", where, key));
      s.rope_scaling_params[key] = value.get<double>();
    }
  }
  s.qkv_bias = h.value("qkv_bias", false);
  s.qk_norm = h.value("qk_norm", false);
  s.qk_norm_whole = h.value("qk_norm_whole", false);
  s.head_bias = h.value("head_bias", false);
  s.multipliers = h.value("multipliers", false);
  s.shared_expert_gate = h.value("shared_expert_gate", false);
  s.attention_chunk = h.value("attention_chunk", std::int64_t{0});
  s.nope_layers = h.value("nope_layers", std::int64_t{0});
  s.nope_interval = h.value("nope_interval", std::int64_t{0});
  s.qk_l2_norm = h.value("qk_l2_norm", false);
  s.router_probs_on_input = h.value("router_probs_on_input", false);
  s.max_positions = json_integer_or<std::int64_t>(h, "max_positions", 0, where.c_str());
  s.expert_bias = h.value("expert_bias", false);
  s.router_score_correction = h.value("router_score_correction", false);
}

}  // namespace

std::optional<ModelShape> model_shape_of(const Graph& g, std::string* why) {
  // Called on every model optimize plans: a graph it cannot read is no decoder, never an error.
  try {
    auto shape = read_shape(g, why);
    if (shape && !g.source_details.empty())
      read_hf_details(*shape, json::parse(g.source_details), "model: source_details");
    return shape;
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return std::nullopt;
  }
}

void add_hf_details(ModelShape& s, const hf::HfConfig& c) {
  s.hf_architecture = c.architecture;
  s.hf_name = c.name;
  s.rope_theta = c.rope_theta;
  s.rotary_fraction = c.rotary_fraction;
  s.rope_scaling = c.rope_scaling;
  s.rope_scaling_params = c.rope_scaling_params;
  s.qkv_bias = c.qkv_bias;
  s.qk_norm = c.qk_norm;
  s.qk_norm_whole = c.qk_norm_whole;
  s.head_bias = c.head_bias;
  s.multipliers = c.multipliers;
  s.max_positions = c.max_positions;
  s.attention_chunk = c.attention_chunk;
  s.nope_layers = c.nope_layers;
  s.nope_interval = c.nope_interval;
  s.qk_l2_norm = c.qk_l2_norm;
  if (c.moe) {
    s.router_probs_on_input = c.moe->probs_on_input;
    s.expert_bias = c.moe->expert_bias;
    s.router_score_correction = c.moe->score_correction;
    s.shared_expert_gate = c.moe->shared_expert_gate;
  }
}

std::string hf_source_details(const hf::HfConfig& config) {
  ModelShape s;
  add_hf_details(s, config);
  return hf_details_json(s).dump();
}

json model_shape_to_json(const ModelShape& s) {
  json j = {{"layers", s.layers},
            {"hidden", s.hidden},
            {"heads", s.heads},
            {"kv_heads", s.kv_heads},
            {"head_dim", s.head_dim},
            {"ffn", s.ffn},
            {"vocab", s.vocab},
            {"seq", s.seq},
            {"positions", s.positions},
            {"tied", s.tied},
            {"rotary", s.rotary},
            {"rms_norm", s.rms_norm},
            {"gated_mlp", s.gated_mlp},
            {"activation", s.activation},
            {"mlp_bias", s.mlp_bias},
            {"attention_bias", s.attention_bias},
            {"parallel_residual", s.parallel_residual},
            {"shared_parallel_norm", s.shared_parallel_norm},
            {"sandwich_norms", s.sandwich_norms},
            {"post_norms", s.post_norms},
            {"sliding_window", s.sliding_window},
            {"window_layers", s.window_layers}};
  if (const auto& m = s.moe)
    j["moe"] = {{"experts", m->experts},
                {"top_k", m->top_k},
                {"expert_ffn", m->expert_ffn},
                {"shared_ffn", m->shared_ffn},
                {"layers", m->layers},
                {"score_function", m->sigmoid ? "sigmoid" : "softmax"},
                {"normalize_top_k", m->normalize_top_k},
                {"gated", m->gated},
                {"route_groups", m->route_groups},
                {"route_group_top_k", m->route_group_top_k}};
  if (const auto& a = s.mla)
    j["mla"] = {{"q_lora_rank", a->q_lora_rank},
                {"kv_lora_rank", a->kv_lora_rank},
                {"qk_head_dim", a->qk_head_dim},
                {"qk_rope_head_dim", a->qk_rope_head_dim},
                {"v_head_dim", a->v_head_dim}};
  if (!s.hf_architecture.empty()) j["hf"] = hf_details_json(s);
  return j;
}

ModelShape model_shape_from_json(const json& j) {
  if (!j.is_object()) throw InputError("plan: summary.model_shape must be an object");
  const char* where = "plan: summary.model_shape";
  ModelShape s;
  try {
    for (auto [field, key] : {std::pair{&s.layers, "layers"},
                              {&s.hidden, "hidden"},
                              {&s.heads, "heads"},
                              {&s.kv_heads, "kv_heads"},
                              {&s.head_dim, "head_dim"},
                              {&s.ffn, "ffn"},
                              {&s.vocab, "vocab"},
                              {&s.seq, "seq"}}) {
      if (!j.contains(key)) throw InputError(fmt::format("{}: missing field '{}'", where, key));
      *field = json_integer<std::int64_t>(j[key], fmt::format("{}.{}", where, key));
      if (*field <= 0) throw InputError(fmt::format("{}.{} must be positive", where, key));
    }
    s.positions = json_integer_or<std::int64_t>(j, "positions", 0, where);
    s.tied = j.value("tied", false);
    s.rotary = j.value("rotary", false);
    s.rms_norm = j.value("rms_norm", false);
    s.gated_mlp = j.value("gated_mlp", false);
    s.activation = j.value("activation", "gelu");
    s.mlp_bias = j.value("mlp_bias", false);
    s.attention_bias = j.value("attention_bias", false);
    s.parallel_residual = j.value("parallel_residual", false);
    s.shared_parallel_norm = j.value("shared_parallel_norm", false);
    s.sandwich_norms = j.value("sandwich_norms", false);
    s.post_norms = j.value("post_norms", false);
    s.sliding_window = json_integer_or<std::int64_t>(j, "sliding_window", 0, where);
    if (j.contains("window_layers")) {
      const json& wl = j["window_layers"];
      if (!wl.is_array() || (!wl.empty() && static_cast<std::int64_t>(wl.size()) != s.layers))
        throw InputError(fmt::format("{}.window_layers must list 0 or 1 for each of the {} layers",
                                     where, s.layers));
      for (const json& v : wl) {
        const int flag = json_integer<int>(v, std::string(where) + ".window_layers");
        if (flag != 0 && flag != 1)
          throw InputError(fmt::format("{}.window_layers must list 0 or 1 for each layer", where));
        s.window_layers.push_back(flag);
      }
    }
    if (j.contains("hf")) {
      read_hf_details(s, j["hf"], where);
      // Plans written before the window moved out of the Hugging Face details.
      if (!j.contains("sliding_window"))
        s.sliding_window = json_integer_or<std::int64_t>(j["hf"], "sliding_window", 0, where);
    }
    if (j.contains("moe")) {
      const json& mj = j["moe"];
      const std::string at = fmt::format("{}.moe", where);
      if (!mj.is_object()) throw InputError(at + " must be an object");
      MoeShape m;
      for (auto [field, key] :
           {std::pair{&m.experts, "experts"}, {&m.top_k, "top_k"}, {&m.expert_ffn, "expert_ffn"}}) {
        if (!mj.contains(key)) throw InputError(fmt::format("{}: missing field '{}'", at, key));
        *field = json_integer<std::int64_t>(mj[key], fmt::format("{}.{}", at, key));
        if (*field <= 0) throw InputError(fmt::format("{}.{} must be positive", at, key));
      }
      if (m.top_k > m.experts)
        throw InputError(
            fmt::format("{}.top_k {} is more than the {} experts", at, m.top_k, m.experts));
      m.shared_ffn = json_integer_or<std::int64_t>(mj, "shared_ffn", 0, at.c_str());
      if (!mj.contains("layers") || !mj["layers"].is_array())
        throw InputError(at + ".layers must be a list of 0 (dense) and 1 (experts) per layer");
      for (const json& l : mj["layers"]) {
        const int v = json_integer<int>(l, at + ".layers");
        if (v != 0 && v != 1)
          throw InputError(at + ".layers must be a list of 0 (dense) and 1 (experts) per layer");
        m.layers.push_back(v);
      }
      if (static_cast<std::int64_t>(m.layers.size()) != s.layers || m.moe_layers() == 0)
        throw InputError(
            fmt::format("{}.layers must list the {} layers, some with experts", at, s.layers));
      const std::string score = mj.value("score_function", "softmax");
      if (score != "softmax" && score != "sigmoid")
        throw InputError(
            fmt::format("{}.score_function must be softmax or sigmoid, got '{}'", at, score));
      m.sigmoid = score == "sigmoid";
      m.normalize_top_k = mj.value("normalize_top_k", false);
      m.gated = mj.value("gated", true);
      m.route_groups = json_integer_or<std::int64_t>(mj, "route_groups", 0, at.c_str());
      m.route_group_top_k = json_integer_or<std::int64_t>(mj, "route_group_top_k", 0, at.c_str());
      if (m.route_groups > 1 && (m.experts % m.route_groups != 0 || m.route_group_top_k < 1 ||
                                 m.route_group_top_k >= m.route_groups ||
                                 m.top_k > m.route_group_top_k * (m.experts / m.route_groups)))
        throw InputError(fmt::format(
            "{}.route_groups {} and route_group_top_k {} do not limit {} experts' top {}: the "
            "groups must divide the experts, keep 1 to route_groups - 1 of them, and hold top_k",
            at, m.route_groups, m.route_group_top_k, m.experts, m.top_k));
      s.moe = m;
    }
    if (j.contains("mla")) {
      const json& aj = j["mla"];
      const std::string at = fmt::format("{}.mla", where);
      if (!aj.is_object()) throw InputError(at + " must be an object");
      LatentAttentionShape a;
      a.q_lora_rank = json_integer_or<std::int64_t>(aj, "q_lora_rank", 0, at.c_str());
      for (auto [field, key] : {std::pair{&a.kv_lora_rank, "kv_lora_rank"},
                                {&a.qk_head_dim, "qk_head_dim"},
                                {&a.qk_rope_head_dim, "qk_rope_head_dim"},
                                {&a.v_head_dim, "v_head_dim"}}) {
        if (!aj.contains(key)) throw InputError(fmt::format("{}: missing field '{}'", at, key));
        *field = json_integer<std::int64_t>(aj[key], fmt::format("{}.{}", at, key));
        if (*field <= 0) throw InputError(fmt::format("{}.{} must be positive", at, key));
      }
      if (a.q_lora_rank < 0) throw InputError(at + ".q_lora_rank must not be negative");
      s.mla = a;
    }
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: a field has the wrong type ({})", where, e.what()));
  }
  return s;
}

}  // namespace unity
