// A decoder's shape read off its serial PCG (model_shape.h). The walk goes by operator kinds and
// wiring, so a decoder imported from ONNX reads as one built by the zoo: the attention layers give
// the heads and the sequence, the loss's Linear the vocabulary, the Linears that read the hidden
// state the FFN width, and how many of those a layer has whether its MLP is gated.
#include "unity/core/plan/model_shape.h"

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

namespace {

std::optional<ModelShape> read_shape(const Graph& g, std::string* why) {
  const auto fail = [&](const std::string& reason) -> std::optional<ModelShape> {
    if (why) *why = reason;
    return std::nullopt;
  };
  std::vector<const Node*> attention, embeddings, linears, norms, adds;
  const Node* loss = nullptr;
  int gelus = 0, sigmoids = 0;
  for (const auto& [id, n] : g.nodes()) {
    switch (n.op.type) {
      case OpType::MultiHeadAttention:
        attention.push_back(&n);
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
        ++sigmoids;
        break;
      case OpType::SoftmaxCrossEntropy:
        loss = &n;
        break;
      case OpType::Conv2D:
      case OpType::ConvTranspose:
      case OpType::EmbeddingBag:
        return fail(fmt::format("it has {} operators", to_string(n.op.type)));
      case OpType::LatentAttention:
        return fail(
            "it has multi-head latent attention, whose launch (Megatron-LM's "
            "--multi-latent-attention, --q-lora-rank, ...) Unity does not write yet");
      case OpType::Experts:
        return fail(
            "it has mixture-of-experts layers, whose launch (Megatron-LM's --num-experts, "
            "--expert-model-parallel-size, ...) Unity does not write yet");
      default:
        break;
    }
  }
  if (attention.empty()) return fail("it has no self-attention layers");
  if (!loss)
    return fail("it has no cross-entropy loss over a vocabulary (a language model's head)");
  ModelShape s;
  const Node& first = *attention.front();
  s.layers = static_cast<std::int64_t>(attention.size());
  s.hidden = size_at(g, first.inputs[0], 2);
  s.seq = size_at(g, first.inputs[0], 1);
  s.heads = first.op.attrs.get_int("num_heads");
  s.kv_heads = first.op.attrs.get_int("num_kv_heads", s.heads);
  if (s.heads <= 0 || s.kv_heads <= 0 || s.hidden <= 0 || s.seq <= 0)
    return fail("its attention has no heads or no width");
  s.head_dim = first.op.attrs.get_int("head_dim", s.heads > 0 ? s.hidden / s.heads : 0);
  s.rotary = first.op.attrs.get_int("rotary", 0) != 0;
  // An imported rotary attention keeps its base (rotary_base, left out at 10000: then not given).
  if (s.rotary) s.rope_theta = first.op.attrs.get_double("rotary_base", 0.0);
  for (const Node* a : attention) {
    if (a->inputs[0] != a->inputs[1] || a->inputs[0] != a->inputs[2])
      return fail(fmt::format("{} is not self-attention", g.describe(a->id)));
    if (a->op.attrs.get_int("causal", 0) == 0)
      return fail(fmt::format("{} is not causal (an encoder's attention, not a decoder's)",
                              g.describe(a->id)));
    if (a->op.attrs.get_int("num_heads") != s.heads ||
        a->op.attrs.get_int("num_kv_heads", s.heads) != s.kv_heads ||
        a->op.attrs.get_int("head_dim", s.hidden / s.heads) != s.head_dim ||
        (a->op.attrs.get_int("rotary", 0) != 0) != s.rotary ||
        a->op.attrs.get_double("rotary_base", 0.0) !=
            first.op.attrs.get_double("rotary_base", 0.0) ||
        size_at(g, a->inputs[0], 2) != s.hidden)
      return fail("its attention layers differ in heads, head size or width");
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
  // The MLPs: the Linears other than the head that read the hidden state (up, and gate) and the
  // ones that write it (down).
  std::map<std::int64_t, int> widths;  // output width -> Linears reading the hidden state
  int downs = 0;
  for (const Node* l : linears) {
    if (l == &head) continue;
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
  if (widths.size() != 1) return fail("its layers do not have one MLP width");
  s.ffn = widths.begin()->first;
  const int ups = widths.begin()->second;
  if (downs != s.layers || (ups != s.layers && ups != 2 * s.layers))
    return fail("its layers do not have one MLP each");
  s.gated_mlp = ups == 2 * s.layers;
  if (gelus > 0)
    s.activation = "gelu";
  else if (sigmoids > 0 && s.gated_mlp)
    s.activation = "silu";
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
  else if (count != 2 * s.layers + 1)
    return fail("its layers do not have a norm before the attention and the MLP");
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

}  // namespace

std::optional<ModelShape> model_shape_of(const Graph& g, std::string* why) {
  // Called on every model optimize plans: a graph it cannot read is no decoder, never an error.
  try {
    return read_shape(g, why);
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return std::nullopt;
  }
}

void add_hf_details(ModelShape& s, const hf::HfConfig& c) {
  s.hf_architecture = c.architecture;
  s.hf_name = c.name;
  s.rope_theta = c.rope_theta;
  s.rope_scaling = c.rope_scaling;
  s.qkv_bias = c.qkv_bias;
  s.qk_norm = c.qk_norm;
  s.sliding_window = c.sliding_window;
  s.max_positions = c.max_positions;
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
            {"sandwich_norms", s.sandwich_norms}};
  if (!s.hf_architecture.empty())
    j["hf"] = {{"architecture", s.hf_architecture},
               {"name", s.hf_name},
               {"rope_theta", s.rope_theta},
               {"rope_scaling", s.rope_scaling},
               {"qkv_bias", s.qkv_bias},
               {"qk_norm", s.qk_norm},
               {"sliding_window", s.sliding_window},
               {"max_positions", s.max_positions}};
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
    s.sandwich_norms = j.value("sandwich_norms", false);
    if (j.contains("hf")) {
      const json& h = j["hf"];
      s.hf_architecture = h.value("architecture", "");
      s.hf_name = h.value("name", "");
      s.rope_theta = h.value("rope_theta", 0.0);
      s.rope_scaling = h.value("rope_scaling", "");
      s.qkv_bias = h.value("qkv_bias", false);
      s.qk_norm = h.value("qk_norm", false);
      s.sliding_window = json_integer_or<std::int64_t>(h, "sliding_window", 0, where);
      s.max_positions = json_integer_or<std::int64_t>(h, "max_positions", 0, where);
    }
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: a field has the wrong type ({})", where, e.what()));
  }
  return s;
}

}  // namespace unity
