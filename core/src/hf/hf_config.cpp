// Reading a Hugging Face config.json: each architecture's fields as the transformers library's
// config class names them (GPT-2's n_embd/n_layer/n_head/n_inner/n_positions, GPT-NeoX's
// rotary_pct and use_parallel_residual, DeepSeek's n_routed_experts, Starcoder 2's use_bias, ...),
// with the class's default where a field is left out or null, and a message naming the file, the
// architecture and the field where a value makes no model.
#include "unity/core/hf/hf_config.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/json_io.h"

namespace unity::hf {
namespace {

using nlohmann::json;

enum class Family {
  Llama,
  Mistral,
  Qwen2,
  Qwen3,
  Gemma,
  Gemma2,
  Gemma3,
  Phi3,
  Gpt2,
  NeoX,
  Phi,
  Starcoder2,
  Olmo2,
  Granite,
  Mixtral,
  Qwen2Moe,
  Qwen3Moe,
  Olmoe,
  PhiMoe,
  DeepseekV2,
  DeepseekV3,
  Glm,
  Glm4,
  Glm4Moe,
  GptOss,
  Llama4,
  MiniMaxM2,
  SmolLM3
};

struct Architecture {
  const char* name;
  const char* model_type;
  Family family;
  bool tied;  // the config class's default for tie_word_embeddings
};

constexpr Architecture kArchitectures[] = {
    {"LlamaForCausalLM", "llama", Family::Llama, false},
    {"MistralForCausalLM", "mistral", Family::Mistral, false},
    {"Qwen2ForCausalLM", "qwen2", Family::Qwen2, false},
    {"Qwen3ForCausalLM", "qwen3", Family::Qwen3, false},
    {"GemmaForCausalLM", "gemma", Family::Gemma, true},
    {"Gemma2ForCausalLM", "gemma2", Family::Gemma2, true},
    {"Gemma3ForCausalLM", "gemma3_text", Family::Gemma3, true},
    {"Phi3ForCausalLM", "phi3", Family::Phi3, false},
    {"GPT2LMHeadModel", "gpt2", Family::Gpt2, true},
    {"GPTNeoXForCausalLM", "gpt_neox", Family::NeoX, false},
    {"PhiForCausalLM", "phi", Family::Phi, false},
    {"Starcoder2ForCausalLM", "starcoder2", Family::Starcoder2, true},
    {"Olmo2ForCausalLM", "olmo2", Family::Olmo2, false},
    {"GraniteForCausalLM", "granite", Family::Granite, false},
    {"MixtralForCausalLM", "mixtral", Family::Mixtral, false},
    {"Qwen2MoeForCausalLM", "qwen2_moe", Family::Qwen2Moe, false},
    {"Qwen3MoeForCausalLM", "qwen3_moe", Family::Qwen3Moe, false},
    {"OlmoeForCausalLM", "olmoe", Family::Olmoe, false},
    {"PhiMoEForCausalLM", "phimoe", Family::PhiMoe, false},
    {"DeepseekV2ForCausalLM", "deepseek_v2", Family::DeepseekV2, false},
    {"DeepseekV3ForCausalLM", "deepseek_v3", Family::DeepseekV3, false},
    {"GlmForCausalLM", "glm", Family::Glm, false},
    {"Glm4ForCausalLM", "glm4", Family::Glm4, false},
    {"Glm4MoeForCausalLM", "glm4_moe", Family::Glm4Moe, false},
    {"Llama4ForCausalLM", "llama4_text", Family::Llama4, false},
    {"GptOssForCausalLM", "gpt_oss", Family::GptOss, false},
    {"MiniMaxM2ForCausalLM", "minimax_m2", Family::MiniMaxM2, false},
    {"SmolLM3ForCausalLM", "smollm3", Family::SmolLM3, true},
};

// Gemma 3's multimodal checkpoints (gemma-3-4b/12b/27b) wrap the language model's config in
// "text_config" and leave out what Gemma3TextConfig defaults.
constexpr const char* kGemma3Wrapper = "Gemma3ForConditionalGeneration";
const json& gemma3_text_defaults() {
  static const json defaults = {{"vocab_size", 262208},
                                {"hidden_size", 2304},
                                {"intermediate_size", 9216},
                                {"num_hidden_layers", 26},
                                {"num_attention_heads", 8},
                                {"num_key_value_heads", 4},
                                {"head_dim", 256},
                                {"hidden_activation", "gelu_pytorch_tanh"},
                                {"max_position_embeddings", 131072},
                                {"rope_theta", 1000000.0},
                                {"sliding_window", 4096},
                                {"sliding_window_pattern", 6},
                                {"tie_word_embeddings", true},
                                {"model_type", "gemma3_text"}};
  return defaults;
}

// Llama 4's checkpoints (Scout, Maverick) are Llama4ForConditionalGeneration: the language
// model's config in "text_config", over Llama4TextConfig's defaults (Scout's sizes).
constexpr const char* kLlama4Wrapper = "Llama4ForConditionalGeneration";
const json& llama4_text_defaults() {
  static const json defaults = {{"vocab_size", 202048},         {"hidden_size", 5120},
                                {"intermediate_size", 8192},    {"intermediate_size_mlp", 16384},
                                {"num_hidden_layers", 48},      {"num_attention_heads", 40},
                                {"num_key_value_heads", 8},     {"head_dim", 128},
                                {"hidden_act", "silu"},         {"max_position_embeddings", 131072},
                                {"rope_theta", 500000.0},       {"num_experts_per_tok", 1},
                                {"num_local_experts", 16},      {"interleave_moe_layer_step", 1},
                                {"use_qk_norm", true},          {"no_rope_layer_interval", 4},
                                {"attention_chunk_size", 8192}, {"tie_word_embeddings", false},
                                {"model_type", "llama4_text"}};
  return defaults;
}

// One config's fields, read with the names of the file and the architecture for messages.
class Fields {
 public:
  Fields(const json& j, std::string source, std::string arch)
      : j_(j), source_(std::move(source)), arch_(std::move(arch)) {}

  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  const json& at(const char* key) const { return j_[key]; }

  [[noreturn]] void fail(const char* key, const std::string& problem) const {
    throw InputError(fmt::format("'{}': {} field '{}' {}", source_, arch_, key, problem));
  }

  // A whole number >= minimum; nullopt where the field is absent or null.
  std::optional<std::int64_t> whole(const char* key, std::int64_t minimum) const {
    if (!has(key)) return std::nullopt;
    const json& v = j_[key];
    std::int64_t n = 0;
    if (v.is_number_integer()) {
      n = v.get<std::int64_t>();
    } else if (v.is_number_float() && std::isfinite(v.get<double>()) &&
               v.get<double>() == std::floor(v.get<double>()) && std::abs(v.get<double>()) < 1e15) {
      n = static_cast<std::int64_t>(v.get<double>());
    } else {
      fail(key, fmt::format("must be a whole number, got {}", v.dump()));
    }
    if (n < minimum)
      fail(key, fmt::format("must be {}, got {}",
                            minimum > 0 ? "a positive whole number" : "zero or more", n));
    return n;
  }
  std::int64_t size(const char* key) const {
    if (auto v = whole(key, 1)) return *v;
    fail(key, "is missing (a size every " + arch_ + " config gives)");
  }
  std::int64_t size_or(const char* key, std::int64_t fallback) const {
    return whole(key, 1).value_or(fallback);
  }
  std::int64_t count_or(const char* key, std::int64_t fallback) const {
    return whole(key, 0).value_or(fallback);
  }
  // The first of `keys` present (GPT-2's n_embd or hidden_size).
  std::int64_t size_of(std::initializer_list<const char*> keys) const {
    for (const char* k : keys)
      if (has(k)) return size(k);
    fail(*keys.begin(), "is missing (a size every " + arch_ + " config gives)");
  }
  bool flag_or(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_boolean())
      fail(key, fmt::format("must be true or false, got {}", j_[key].dump()));
    return j_[key].get<bool>();
  }
  double number_or(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_number()) fail(key, fmt::format("must be a number, got {}", j_[key].dump()));
    return j_[key].get<double>();
  }
  std::string text_or(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_string()) fail(key, fmt::format("must be a string, got {}", j_[key].dump()));
    return j_[key].get<std::string>();
  }

 private:
  const json& j_;
  std::string source_, arch_;
};

std::string supported_list() {
  return fmt::format("{}", fmt::join(supported_architectures(), ", "));
}

// The supported architecture a config names: the first of "architectures" this reader knows, else
// its model_type's.
const Architecture& find_architecture(const json& j, const std::string& source) {
  if (j.contains("architectures") && !j["architectures"].is_null()) {
    const json& list = j["architectures"];
    if (!list.is_array() || list.empty())
      throw InputError(
          fmt::format("'{}': 'architectures' must be a list of names, got {}; "
                      "supported architectures: {}",
                      source, list.dump(), supported_list()));
    std::vector<std::string> named;
    for (const json& entry : list) {
      if (!entry.is_string())
        throw InputError(
            fmt::format("'{}': 'architectures' holds {}, not a name", source, entry.dump()));
      named.push_back(entry.get<std::string>());
      for (const auto& a : kArchitectures)
        if (named.back() == a.name) return a;
    }
    throw InputError(
        fmt::format("'{}': architecture {} is not supported; supported "
                    "architectures: {}",
                    source, fmt::join(named, ", "), supported_list()));
  }
  if (j.contains("model_type") && j["model_type"].is_string()) {
    const auto type = j["model_type"].get<std::string>();
    for (const auto& a : kArchitectures)
      if (type == a.model_type) return a;
    throw InputError(
        fmt::format("'{}': model_type '{}' is not supported; supported "
                    "architectures: {}",
                    source, type, supported_list()));
  }
  throw InputError(
      fmt::format("'{}' has neither 'architectures' nor 'model_type', so it is not a "
                  "Hugging Face config; supported architectures: {}",
                  source, supported_list()));
}

// Layers that attend within a sliding window, from "layer_types" where the config lists them.
std::optional<std::vector<bool>> sliding_from_layer_types(const Fields& f, std::int64_t layers) {
  if (!f.has("layer_types")) return std::nullopt;
  const json& types = f.at("layer_types");
  if (!types.is_array()) f.fail("layer_types", "must be a list of attention kinds");
  if (static_cast<std::int64_t>(types.size()) != layers)
    f.fail("layer_types",
           fmt::format("lists {} layers; num_hidden_layers is {}", types.size(), layers));
  std::vector<bool> sliding;
  for (const json& t : types) {
    if (!t.is_string()) f.fail("layer_types", fmt::format("holds {}, not a name", t.dump()));
    sliding.push_back(t.get<std::string>() == "sliding_attention");
  }
  return sliding;
}

// Layers without a rotary embedding (Llama 4, SmolLM3): no_rope_layers holds 1 where a layer
// rotates and 0 where it does not; without it, every no_rope_layer_interval-th layer goes
// without.
void read_nope_layers(HfConfig& c, const Fields& f) {
  if (!f.has("no_rope_layers") || f.at("no_rope_layers").empty()) {
    c.nope_interval = f.size_or("no_rope_layer_interval", 4);
    c.nope_layers = c.layers / c.nope_interval;
    return;
  }
  const json& list = f.at("no_rope_layers");
  if (!list.is_array() || static_cast<std::int64_t>(list.size()) != c.layers)
    f.fail("no_rope_layers", fmt::format("must list a 0 or 1 for each of the {} layers", c.layers));
  for (const json& v : list) {
    if (!v.is_number_integer() || (v.get<int>() != 0 && v.get<int>() != 1))
      f.fail("no_rope_layers", fmt::format("holds {}, not 0 or 1", v.dump()));
    c.nope_layers += v.get<int>() == 0;
  }
  // Regular where exactly every interval-th layer goes without.
  if (c.nope_layers > 0 && c.layers % c.nope_layers == 0) {
    const std::int64_t every = c.layers / c.nope_layers;
    bool regular = true;
    for (std::int64_t i = 0; i < c.layers; ++i)
      regular &= (list[static_cast<std::size_t>(i)].get<int>() == 0) == ((i + 1) % every == 0);
    if (regular) c.nope_interval = every;
  }
}

void read_sliding_window(HfConfig& c, const Fields& f, Family family) {
  if (family == Family::MiniMaxM2) return;  // MiniMaxM2Attention drops its config's window
  const std::int64_t window = f.count_or("sliding_window", 0);
  std::vector<bool> sliding;
  for (std::int64_t i = 0; i < c.layers; ++i) {
    bool s = true;
    switch (family) {
      case Family::Qwen2:
      case Family::Qwen3:
      case Family::Qwen2Moe:
      case Family::Qwen3Moe:
      case Family::SmolLM3:
        // Qwen2Config (and SmolLM3Config, after it): a window only with use_sliding_window, on
        // the layers from max_window_layers on.
        s = f.flag_or("use_sliding_window", false) &&
            i >= f.count_or("max_window_layers", c.layers);
        break;
      case Family::Gemma2:  // every other layer, the first one included
        s = i % 2 == 0;
        break;
      case Family::Gemma3:  // all but every sliding_window_pattern-th layer
        s = (i + 1) % f.size_or("sliding_window_pattern", 6) != 0;
        break;
      default:
        break;
    }
    sliding.push_back(s);
  }
  if (auto listed = sliding_from_layer_types(f, c.layers)) sliding = *listed;
  const auto layers = static_cast<std::int64_t>(std::count(sliding.begin(), sliding.end(), true));
  if (window > 0 && layers > 0) {
    c.sliding_window = window;
    c.sliding_layers = layers;
    c.sliding = sliding;
  }
}

void read_moe(HfConfig& c, const Fields& f, Family family) {
  MoeConfig m;
  const bool v3 = family == Family::DeepseekV3;
  switch (family) {
    case Family::Mixtral:
      m.experts = f.size("num_local_experts");
      m.experts_per_token = f.size("num_experts_per_tok");
      m.expert_ffn = c.ffn;
      m.normalize_top_k = true;  // MixtralSparseMoeBlock divides the top-k weights by their sum
      break;
    case Family::GptOss:
      m.experts = f.size("num_local_experts");
      m.experts_per_token = f.has("num_experts_per_tok") ? f.size("num_experts_per_tok")
                                                         : f.size("experts_per_token");
      m.expert_ffn = c.ffn;
      m.expert_bias = true;
      m.normalize_top_k = true;  // a softmax over the top-k logits
      break;
    case Family::MiniMaxM2:
      // MiniMaxM2SparseMoeBlock: Mixtral's experts on every layer, intermediate_size wide, under
      // a sigmoid router with a score correction (MiniMaxM2TopKRouter: e_score_correction_bias,
      // a buffer), the picked scores renormalised; no shared expert.
      m.experts = f.has("num_local_experts") ? f.size("num_local_experts") : f.size("num_experts");
      m.experts_per_token = f.size("num_experts_per_tok");
      m.expert_ffn = c.ffn;
      m.sigmoid_scores = m.score_correction = m.normalize_top_k = true;
      break;
    case Family::PhiMoe:  // Mixtral's block; its sparsemixer routing picks, it adds no work
      m.experts = f.size("num_local_experts");
      m.experts_per_token = f.size("num_experts_per_tok");
      m.expert_ffn = c.ffn;
      m.normalize_top_k = true;
      break;
    case Family::Olmoe:  // every layer's MLP is its experts, intermediate_size wide
      m.experts = f.size("num_experts");
      m.experts_per_token = f.size("num_experts_per_tok");
      m.expert_ffn = c.ffn;
      m.normalize_top_k = f.flag_or("norm_topk_prob", false);
      break;
    case Family::Qwen2Moe:
    case Family::Qwen3Moe:
      m.experts = f.size("num_experts");
      m.experts_per_token = f.size("num_experts_per_tok");
      m.expert_ffn = f.size("moe_intermediate_size");
      m.layer_step = f.size_or("decoder_sparse_step", 1);
      m.normalize_top_k = f.flag_or("norm_topk_prob", false);
      if (family == Family::Qwen2Moe) {
        // Qwen2MoeSparseMoeBlock: one shared expert of its own width, scaled by a sigmoid gate.
        m.shared_ffn = f.count_or("shared_expert_intermediate_size", 0);
        m.shared_expert_gate = m.shared_ffn > 0;
      }
      if (f.has("mlp_only_layers")) {
        const json& list = f.at("mlp_only_layers");
        if (!list.is_array()) f.fail("mlp_only_layers", "must be a list of layer numbers");
        for (const json& i : list) {
          if (!i.is_number_integer() || i.get<std::int64_t>() < 0 ||
              i.get<std::int64_t>() >= c.layers)
            f.fail("mlp_only_layers",
                   fmt::format("holds {}, not a layer number below {}", i.dump(), c.layers));
          m.dense_layers.push_back(i.get<std::int64_t>());
        }
      }
      break;
    case Family::DeepseekV2:  // DeepseekV2Config's defaults: softmax scores, greedy top-k
    case Family::DeepseekV3:
      m.experts = f.size("n_routed_experts");
      m.experts_per_token = f.size("num_experts_per_tok");
      m.expert_ffn = f.size("moe_intermediate_size");
      m.shared_experts = f.count_or("n_shared_experts", 0);
      m.dense_layers_first = f.count_or("first_k_dense_replace", 0);
      m.layer_step = f.size_or("moe_layer_freq", 1);
      m.step_from_one = false;
      {
        const std::string method = f.text_or("topk_method", v3 ? "noaux_tc" : "greedy");
        m.score_correction = method == "noaux_tc";
        // DeepseekV3Config's defaults: 8 groups, 4 kept; V2's routing limits by group only with
        // "group_limited_greedy" (DeepSeek-V2: 8 groups, 3 kept).
        if (method == "noaux_tc" || method == "group_limited_greedy") {
          m.route_groups = f.size_or("n_group", v3 ? 8 : 1);
          m.route_group_top_k = f.size_or("topk_group", v3 ? 4 : 1);
        }
      }
      m.sigmoid_scores = f.text_or("scoring_func", v3 ? "sigmoid" : "softmax") == "sigmoid";
      m.normalize_top_k = f.flag_or("norm_topk_prob", v3);
      break;
    case Family::Glm4Moe:
      // Glm4MoeConfig's defaults (GLM-4.5-Air's sizes): DeepSeek-V3's layer (shared experts of
      // the routed ones' width, the first layers dense), its router always sigmoid scores with a
      // score correction (Glm4MoeTopkRouter's e_score_correction_bias).
      m.experts = f.size_or("n_routed_experts", 128);
      m.experts_per_token = f.size_or("num_experts_per_tok", 8);
      m.expert_ffn = f.size_or("moe_intermediate_size", 1408);
      m.shared_experts = f.count_or("n_shared_experts", 1);
      m.dense_layers_first = f.count_or("first_k_dense_replace", 1);
      m.step_from_one = false;
      m.score_correction = m.sigmoid_scores = true;
      m.normalize_top_k = f.flag_or("norm_topk_prob", true);
      m.route_groups = f.size_or("n_group", 1);  // Glm4MoeTopkRouter limits as DeepSeek-V3's
      m.route_group_top_k = f.size_or("topk_group", 1);
      break;
    case Family::Llama4: {
      // Llama4TextMoe: routed experts and one shared expert, both intermediate_size wide, top-k
      // scores through a sigmoid (not renormalised), on every interleave_moe_layer_step-th layer
      // (the step's last) or the layers moe_layers lists; the other layers' MLP is
      // intermediate_size_mlp wide.
      m.experts = f.size("num_local_experts");
      m.experts_per_token = f.size("num_experts_per_tok");
      m.expert_ffn = f.size("intermediate_size");
      m.shared_experts = 1;
      m.layer_step = f.size_or("interleave_moe_layer_step", 1);
      m.step_from_one = true;
      m.sigmoid_scores = true;
      m.normalize_top_k = false;
      m.probs_on_input = true;
      if (f.has("moe_layers")) {
        const json& list = f.at("moe_layers");
        if (!list.is_array()) f.fail("moe_layers", "must be a list of layer numbers");
        std::vector<bool> moe(static_cast<std::size_t>(c.layers), false);
        for (const json& i : list) {
          if (!i.is_number_integer() || i.get<std::int64_t>() < 0 ||
              i.get<std::int64_t>() >= c.layers)
            f.fail("moe_layers",
                   fmt::format("holds {}, not a layer number below {}", i.dump(), c.layers));
          moe[static_cast<std::size_t>(i.get<std::int64_t>())] = true;
        }
        m.layer_step = 1;
        for (std::int64_t i = 0; i < c.layers; ++i)
          if (!moe[static_cast<std::size_t>(i)]) m.dense_layers.push_back(i);
      }
      break;
    }
    default:
      return;
  }
  if (m.experts_per_token > m.experts)
    f.fail("num_experts_per_tok",
           fmt::format("is {}, more than the {} experts", m.experts_per_token, m.experts));
  if (m.route_groups > 1) {
    if (m.experts % m.route_groups != 0)
      f.fail("n_group",
             fmt::format("is {}, which does not divide the {} experts", m.route_groups, m.experts));
    if (m.route_group_top_k > m.route_groups)
      f.fail("topk_group", fmt::format("is {}, more than the {} groups (n_group)",
                                       m.route_group_top_k, m.route_groups));
    if (m.experts_per_token > m.route_group_top_k * (m.experts / m.route_groups))
      f.fail("topk_group",
             fmt::format("keeps {} groups of {} experts, fewer than num_experts_per_tok {}",
                         m.route_group_top_k, m.experts / m.route_groups, m.experts_per_token));
  }
  if (m.route_groups <= 1 || m.route_group_top_k >= m.route_groups)
    m.route_groups = m.route_group_top_k = 0;  // every group kept: no limit
  if (m.dense_layers_first > c.layers)
    f.fail("first_k_dense_replace",
           fmt::format("is {}, more than the {} layers", m.dense_layers_first, c.layers));
  c.moe = m;
}

// Transformers 5 writes the rotary settings as one rope_parameters object: rope_theta,
// partial_rotary_factor, and the scaling's rope_type with its numbers; flat, or one object per
// layer type (Gemma 3's full_attention and sliding_attention, the full attention's being the one
// the model's launch takes). Where a config has it, it is what transformers reads.
void read_rope_parameters(HfConfig& c, const Fields& f) {
  const json& all = f.at("rope_parameters");
  if (!all.is_object())
    f.fail("rope_parameters", fmt::format("must be an object, got {}", all.dump()));
  const json* p = &all;
  if (!all.contains("rope_type") && !all.contains("rope_theta") && !all.contains("type")) {
    // One object per layer type: the full attention's, else the first.
    for (const auto& [layer_type, params] : all.items())
      if (params.is_object() && (p == &all || layer_type == "full_attention")) p = &params;
  }
  for (const char* number : {"rope_theta", "partial_rotary_factor"})
    if (p->contains(number) && !(*p)[number].is_null() && !(*p)[number].is_number())
      f.fail("rope_parameters",
             fmt::format("'s {} must be a number, got {}", number, (*p)[number].dump()));
  if (p->contains("rope_theta") && (*p)["rope_theta"].is_number())
    c.rope_theta = (*p)["rope_theta"].get<double>();
  if (p->contains("partial_rotary_factor") && (*p)["partial_rotary_factor"].is_number())
    c.rotary_fraction = (*p)["partial_rotary_factor"].get<double>();
  c.rope_scaling = p->value("rope_type", p->value("type", std::string("default")));
  c.rope_scaling_params.clear();
  for (const auto& [key, value] : p->items())
    if (value.is_number() && key != "rope_theta" && key != "partial_rotary_factor")
      c.rope_scaling_params[key] = value.get<double>();
}

void read_mla(HfConfig& c, const Fields& f) {
  MlaConfig m;
  m.q_lora_rank = f.count_or("q_lora_rank", 0);
  m.kv_lora_rank = f.size("kv_lora_rank");
  m.qk_nope_head_dim = f.size("qk_nope_head_dim");
  m.qk_rope_head_dim = f.size("qk_rope_head_dim");
  m.v_head_dim = f.size("v_head_dim");
  c.mla = m;
}

// GPT-2's own names (GPT2Config: n_embd, n_layer, n_head, n_inner, n_positions).
void read_gpt2(HfConfig& c, const Fields& f) {
  c.hidden = f.size_of({"n_embd", "hidden_size"});
  c.layers = f.size_of({"n_layer", "num_hidden_layers"});
  c.heads = f.size_of({"n_head", "num_attention_heads"});
  c.kv_heads = c.heads;
  c.ffn = f.size_or("n_inner", 4 * c.hidden);
  c.max_positions =
      f.has("n_positions") ? f.size("n_positions") : f.size_or("max_position_embeddings", 1024);
  c.vocab = f.size("vocab_size");
  c.qkv_bias = c.out_bias = c.mlp_bias = true;
  c.layer_norm = true;
  c.gated_mlp = false;
  c.learned_positions = true;
  c.activation = f.text_or("activation_function", "gelu_new");
}

void read_decoder(HfConfig& c, const Fields& f, Family family) {
  c.hidden = f.size("hidden_size");
  c.layers = f.size("num_hidden_layers");
  c.heads = f.size("num_attention_heads");
  c.kv_heads = f.size_or("num_key_value_heads", c.heads);
  const bool gemma =
      family == Family::Gemma || family == Family::Gemma2 || family == Family::Gemma3;
  c.head_dim = f.count_or("head_dim", gemma ? 256 : 0);
  if (c.head_dim == 0 && f.has("head_dim"))
    f.fail("head_dim", "must be a positive whole number, got 0");
  c.ffn = f.size("intermediate_size");
  c.vocab = f.size("vocab_size");
  c.max_positions = f.count_or("max_position_embeddings", 0);
  c.activation =
      f.text_or("hidden_activation", f.text_or("hidden_act", gemma ? "gelu_pytorch_tanh" : "silu"));
  c.rope_theta = f.number_or(
      "rope_theta",
      f.number_or("rotary_emb_base", family == Family::MiniMaxM2 ? 1000000.0 : 10000.0));
  // GLM's configs (GlmConfig, Glm4Config, Glm4MoeConfig) rotate half of each head unless told
  // otherwise; GlmConfig and Glm4Config put biases on q, k and v unless told otherwise.
  const bool glm = family == Family::Glm || family == Family::Glm4 || family == Family::Glm4Moe;
  c.rotary_fraction = f.number_or("partial_rotary_factor", glm ? 0.5 : 1.0);
  const bool bias =
      f.flag_or("attention_bias", family == Family::NeoX || family == Family::GptOss ||
                                      family == Family::PhiMoe || family == Family::Glm ||
                                      family == Family::Glm4);
  c.qkv_bias = c.out_bias = bias;
  c.mlp_bias = f.flag_or("mlp_bias", false);
  switch (family) {
    case Family::Qwen2:  // Qwen2Attention: biases on q, k and v, none on o
    case Family::Qwen2Moe:
      c.qkv_bias = true;
      c.out_bias = false;
      break;
    case Family::Glm4Moe:  // attention_bias on q, k and v only; per-head q/k norms if use_qk_norm
      c.out_bias = false;
      c.qk_norm = f.flag_or("use_qk_norm", false);
      break;
    case Family::Glm:  // GlmAttention: attention_bias on q, k and v only
      c.out_bias = false;
      break;
    case Family::Glm4:  // GLM's block with a norm after the attention and after the MLP too
      c.out_bias = false;
      c.sandwich_norms = true;
      break;
    case Family::Llama4: {
      // The dense layers' MLP is intermediate_size_mlp wide (intermediate_size is the experts').
      c.ffn = f.size("intermediate_size_mlp");
      c.qk_l2_norm = f.flag_or("use_qk_norm", true);
      c.attention_chunk = f.count_or("attention_chunk_size", 0);
      read_nope_layers(c, f);
      break;
    }
    case Family::SmolLM3:  // Llama's layers, every fourth without rotary (NoPE)
      read_nope_layers(c, f);
      break;
    case Family::Olmoe:  // OlmoeAttention: RMSNorm over the whole q and k projections
      c.qk_norm_whole = true;
      break;
    case Family::MiniMaxM2:
      // MiniMaxM2Attention: RMSNorm over the whole q and k projections, and a rotary_dim of
      // each head rotated (MiniMaxM2Config turns it into partial_rotary_factor).
      c.qk_norm_whole = true;
      if (!f.has("partial_rotary_factor") && f.has("rotary_dim")) {
        const std::int64_t rotary = f.size("rotary_dim");
        c.rotary_fraction = static_cast<double>(rotary) / static_cast<double>(c.head_size());
      }
      break;
    case Family::Olmo2:  // OLMoE's q and k norms, and each block's norm after it, none before
      c.qk_norm_whole = c.post_norms = true;
      break;
    case Family::Granite:  // Llama's block with its scalars (GraniteConfig's defaults: 1)
      for (const char* key : {"embedding_multiplier", "residual_multiplier", "attention_multiplier",
                              "logits_scaling"})
        if (f.number_or(key, 1.0) != 1.0) c.multipliers = true;
      break;
    case Family::PhiMoe:  // PhiMoE: LayerNorm with biases, and a bias on the head
      c.layer_norm = true;
      c.head_bias = f.flag_or("lm_head_bias", false);
      break;
    case Family::Starcoder2:  // LayerNorm, use_bias on every linear layer, a plain GELU MLP
      c.layer_norm = true;
      c.gated_mlp = false;
      c.qkv_bias = c.out_bias = c.mlp_bias = f.flag_or("use_bias", true);
      c.activation = f.text_or("hidden_act", "gelu_pytorch_tanh");
      break;
    case Family::Qwen3:
    case Family::Qwen3Moe:
      c.qk_norm = true;
      break;
    case Family::Gemma2:
      c.sandwich_norms = true;
      break;
    case Family::Gemma3:
      c.sandwich_norms = c.qk_norm = true;
      break;
    case Family::NeoX:
      c.layer_norm = true;
      c.gated_mlp = false;
      c.mlp_bias = true;
      c.parallel_residual = f.flag_or("use_parallel_residual", true);
      c.rotary_fraction = f.number_or("rotary_pct", 0.25);
      c.activation = f.text_or("hidden_act", "gelu");
      break;
    case Family::Phi:
      // PhiDecoderLayer: one LayerNorm that the attention and the MLP both read, added back in
      // parallel; biases on q, k, v and the output projection, a plain GELU MLP with biases, a
      // bias on the head; PhiConfig rotates 0.5 of each head unless told otherwise.
      c.layer_norm = true;
      c.gated_mlp = false;
      c.mlp_bias = c.qkv_bias = c.out_bias = c.head_bias = true;
      c.parallel_residual = c.shared_parallel_norm = true;
      c.rotary_fraction = f.number_or("partial_rotary_factor", 0.5);
      c.activation = f.text_or("hidden_act", "gelu_new");
      if (f.flag_or("qk_layernorm", false))
        f.fail("qk_layernorm", "LayerNorms over each head's queries and keys are not built");
      break;
    case Family::GptOss:
      c.attention_sinks = true;
      break;
    case Family::DeepseekV2:
    case Family::DeepseekV3:
      read_mla(c, f);
      break;
    default:
      break;
  }
  if (f.has("rope_scaling")) {
    const json& s = f.at("rope_scaling");
    if (!s.is_object()) f.fail("rope_scaling", fmt::format("must be an object, got {}", s.dump()));
    c.rope_scaling = s.value("rope_type", s.value("type", std::string("unnamed")));
    for (const auto& [key, value] : s.items())
      if (value.is_number()) c.rope_scaling_params[key] = value.get<double>();
  }
  if (f.has("rope_parameters")) read_rope_parameters(c, f);
  if (c.rope_scaling == "default") {  // the plain rotary embedding, named
    c.rope_scaling.clear();
    c.rope_scaling_params.clear();
  }
  if (!(c.rotary_fraction > 0 && c.rotary_fraction <= 1))
    f.fail(family == Family::NeoX ? "rotary_pct" : "partial_rotary_factor",
           fmt::format("must be in (0, 1], got {}", c.rotary_fraction));
}

void check_sizes(const HfConfig& c, const Fields& f) {
  if (c.head_dim == 0 && c.hidden % c.heads != 0)
    f.fail("num_attention_heads", fmt::format("is {}, which does not divide hidden_size {}, and "
                                              "the config gives no head_dim",
                                              c.heads, c.hidden));
  if (c.heads % c.kv_heads != 0)
    f.fail("num_key_value_heads",
           fmt::format("is {}, which does not divide the {} attention heads", c.kv_heads, c.heads));
  // Rotary embeddings turn pairs of a head's elements.
  const auto rotated = static_cast<std::int64_t>(
      std::llround(static_cast<double>(c.head_size()) * c.rotary_fraction));
  if (!c.learned_positions && !c.mla && rotated % 2 != 0)
    f.fail("head_dim", fmt::format("gives heads of {} of which {} are rotated: rotary embeddings "
                                   "turn pairs, so that must be even",
                                   c.head_size(), rotated));
}

}  // namespace

bool MoeConfig::is_moe_layer(std::int64_t i) const {
  if (i < dense_layers_first) return false;
  if (std::find(dense_layers.begin(), dense_layers.end(), i) != dense_layers.end()) return false;
  return (step_from_one ? i + 1 : i) % layer_step == 0;
}

const std::vector<std::string>& supported_architectures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& a : kArchitectures) n.emplace_back(a.name);
    return n;
  }();
  return names;
}

const std::vector<std::string>& built_architectures() { return supported_architectures(); }

HfConfig parse_hf_config(const json& config, const std::string& source, const std::string& name) {
  if (!config.is_object())
    throw InputError(fmt::format("'{}' holds {} where a Hugging Face config holds an object",
                                 source, config.type_name()));
  // A multimodal checkpoint's language model: its text_config over the text config class's
  // defaults (Gemma 3's SigLIP tower, Llama 4's vision encoder and projector left out).
  json merged;
  const json* j = &config;
  for (const auto& [wrapper, defaults, inner] :
       {std::tuple{kGemma3Wrapper, &gemma3_text_defaults(), "Gemma3ForCausalLM"},
        std::tuple{kLlama4Wrapper, &llama4_text_defaults(), "Llama4ForCausalLM"}}) {
    if (!config.contains("architectures") || !config["architectures"].is_array() ||
        std::find(config["architectures"].begin(), config["architectures"].end(), wrapper) ==
            config["architectures"].end())
      continue;
    if (!config.contains("text_config") || !config["text_config"].is_object())
      throw InputError(fmt::format("'{}': {} config has no 'text_config' object", source, wrapper));
    merged = *defaults;
    merged.update(config["text_config"]);
    merged["architectures"] = {inner};
    for (const char* key : {"torch_dtype", "dtype"})
      if (!merged.contains(key) && config.contains(key)) merged[key] = config[key];
    j = &merged;
    break;
  }
  const Architecture& arch = find_architecture(*j, source);
  const Fields f(*j, source, arch.name);
  HfConfig c;
  c.architecture = arch.name;
  c.model_type = f.text_or("model_type", arch.model_type);
  c.name = name.empty() ? arch.name : name;
  if (arch.family == Family::Gpt2)
    read_gpt2(c, f);
  else
    read_decoder(c, f, arch.family);
  c.tied = f.flag_or("tie_word_embeddings", arch.tied);
  c.dtype = f.text_or("torch_dtype", f.text_or("dtype", ""));
  if (!c.dtype.empty() && c.dtype != "bfloat16" && c.dtype != "float16" && c.dtype != "float32")
    f.fail(f.has("torch_dtype") ? "torch_dtype" : "dtype",
           fmt::format("is '{}'; Unity reads bfloat16, float16 or float32", c.dtype));
  check_sizes(c, f);
  read_sliding_window(c, f, arch.family);
  read_moe(c, f, arch.family);
  return c;
}

HfConfig read_hf_config(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path file = path;
  if (fs::is_directory(path, ec)) {
    file = path / "config.json";
    if (!fs::exists(file, ec))
      throw InputError(fmt::format("'{}' is a folder without a config.json", path.string()));
  }
  // The model's name is its folder's (models/hf/Llama-3.1-8B/config.json: "Llama-3.1-8B").
  std::string name = file.stem().string();
  if (file.filename() == "config.json") {
    const fs::path folder = fs::absolute(file, ec).parent_path();
    name = folder.filename().string();
  }
  return parse_hf_config(read_json_file(file), file.string(), name);
}

}  // namespace unity::hf
