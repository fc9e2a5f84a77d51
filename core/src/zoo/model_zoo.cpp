// The zoo's registry: names, descriptions and default per-device batches (paper section 6.1), and
// the dispatch to each model's builder.
#include "unity/core/zoo/model_zoo.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/pcg/compute_dtype.h"
#include "zoo/zoo_models.h"

namespace unity::zoo {
namespace {

struct Entry {
  ModelInfo info;
  void (*build)(GraphBuilder&, std::int64_t batch);
};

// A member of a decoder family: its shape, and the dtype its tensors train in.
struct FamilyMember {
  const char* name;
  const char* family;
  TransformerSizes shape;
  std::int64_t default_batch;  // per device
  const char* source;
};

constexpr std::int64_t kGptVocab = 51200, kGptSeq = 2048;      // Megatron-LM Table 1
constexpr std::int64_t kLlamaVocab = 32000, kLlamaSeq = 4096;  // Llama 2 (Touvron et al. 2023)
// Llama 3 (Meta, "The Llama 3 Herd of Models", 2024, Table 3): a 128K-token vocabulary, and the
// 8,192-token sequence of its pre-training (before the long-context stage).
constexpr std::int64_t kLlama3Vocab = 128256, kLlama3Seq = 8192;

TransformerSizes gpt(std::int64_t layers, std::int64_t hidden, std::int64_t heads) {
  return {layers, hidden, heads, heads, 4 * hidden, kGptSeq, kGptVocab};
}

// A mixture-of-experts member of the llama family (every layer MoE unless dense_first says).
TransformerSizes moe(TransformerSizes z, std::int64_t experts, std::int64_t top_k,
                     std::int64_t expert_ffn, bool normalize, std::int64_t head_dim = 0) {
  z.experts = experts;
  z.experts_per_token = top_k;
  z.expert_ffn = expert_ffn;
  z.normalize_top_k = normalize;
  z.head_dim = head_dim;
  return z;
}

// The MoE runs of shared/reference/moe-runs.md train at 4,096 tokens.
constexpr std::int64_t kMoeSeq = 4096;

TransformerSizes gpt_oss_120b() {
  // OpenAI's gpt-oss-120b config.json: 36 layers, hidden 2,880, 64 heads of 64 with 8 key/value
  // heads, 128 experts of 2,880 (top 4; the router's softmax over the 4 picked logits is the
  // full softmax renormalised over them), o200k vocabulary (201,088), biases on the attention;
  // its layer_types alternate a 128-token sliding window and full attention, windowed first.
  TransformerSizes z =
      moe({36, 2880, 64, 8, 2880, kMoeSeq, 201088}, 128, 4, 2880, true, /*head_dim=*/64);
  z.attention_bias = true;
  z.window = 128;
  z.windowed = {true, false};
  return z;
}

// DeepSeek-V3 (DeepSeek-AI, "DeepSeek-V3 Technical Report", 2024; config.json of
// deepseek-ai/DeepSeek-V3): 61 layers, hidden 7,168, multi-head latent attention (128 heads, query
// latent 1,536, key/value latent 512, heads of 128 + 64 rotary, values of 128), the first 3
// layers dense (SwiGLU of 18,432), the other 58 with 256 routed experts of 2,048 (8 per token,
// sigmoid scores renormalised over the picked) and 1 shared expert, vocabulary 129,280, untied.
// The multi-token prediction module is not part of the 671B and is left out, and so is the
// routed scaling factor 2.5 (the gates' scale). Its node-limited routing (8 groups of 32
// experts, a token's 8 taken from its best 4) is held on the Experts operator: it bounds how
// many nodes an expert-parallel dispatch sends a token to. The graph's router still picks from
// every expert: the executor checks a plan's numerics, not DeepSeek's routing.
TransformerSizes deepseek(TransformerSizes z, std::int64_t experts, std::int64_t top_k,
                          std::int64_t expert_ffn, std::int64_t dense_first,
                          std::array<std::int64_t, 5> mla, std::array<std::int64_t, 2> groups) {
  z = moe(z, experts, top_k, expert_ffn, true);
  z.route_groups = groups[0];
  z.route_group_top_k = groups[1];
  z.shared_experts = 1;
  z.dense_layers_first = dense_first;
  z.router_sigmoid = true;
  z.q_lora = mla[0];
  z.kv_lora = mla[1];
  z.qk_nope = mla[2];
  z.qk_rope = mla[3];
  z.v_head_dim = mla[4];
  return z;
}

const std::vector<FamilyMember>& family_members() {
  static const std::vector<FamilyMember> kMembers = {
      {"gpt-1.7b", "gpt", gpt(24, 2304, 24), 16, "Megatron-LM Table 1"},
      {"gpt-3.6b", "gpt", gpt(30, 3072, 32), 8, "Megatron-LM Table 1"},
      {"gpt-7.5b", "gpt", gpt(36, 4096, 32), 4, "Megatron-LM Table 1"},
      {"gpt-18b", "gpt", gpt(40, 6144, 48), 4, "Megatron-LM Table 1"},
      {"gpt-39b", "gpt", gpt(48, 8192, 64), 2, "Megatron-LM Table 1"},
      {"gpt-76b", "gpt", gpt(60, 10240, 80), 2, "Megatron-LM Table 1"},
      {"gpt-145b", "gpt", gpt(80, 12288, 96), 1, "Megatron-LM Table 1"},
      {"gpt-310b", "gpt", gpt(96, 16384, 128), 1, "Megatron-LM Table 1"},
      {"gpt-530b", "gpt", gpt(105, 20480, 128), 1, "Megatron-LM Table 1"},
      {"gpt-1t", "gpt", gpt(128, 25600, 160), 1, "Megatron-LM Table 1"},
      {"gpt-tiny", "gpt", {2, 64, 4, 4, 256, 32, 256}, 4, "a small member for tests"},
      {"llama-7b", "llama", {32, 4096, 32, 32, 11008, kLlamaSeq, kLlamaVocab}, 1, "Llama 2"},
      {"llama-13b", "llama", {40, 5120, 40, 40, 13824, kLlamaSeq, kLlamaVocab}, 1, "Llama 2"},
      {"llama-70b", "llama", {80, 8192, 64, 8, 28672, kLlamaSeq, kLlamaVocab}, 1, "Llama 2"},
      {"llama-tiny", "llama", {2, 64, 4, 2, 176, 32, 256}, 4, "a small member for tests"},
      {"llama3-8b", "llama", {32, 4096, 32, 8, 14336, kLlama3Seq, kLlama3Vocab}, 1, "Llama 3"},
      {"llama3-70b", "llama", {80, 8192, 64, 8, 28672, kLlama3Seq, kLlama3Vocab}, 1, "Llama 3"},
      {"llama3-405b", "llama", {126, 16384, 128, 8, 53248, kLlama3Seq, kLlama3Vocab}, 1, "Llama 3"},
      {"mixtral-8x7b", "llama", moe({32, 4096, 32, 8, 14336, kMoeSeq, 32000}, 8, 2, 14336, true), 1,
       "Mixtral 8x7B (Mistral AI, 2024)"},
      {"mixtral-8x22b", "llama", moe({56, 6144, 48, 8, 16384, kMoeSeq, 32768}, 8, 2, 16384, true),
       1, "Mixtral 8x22B (Mistral AI, 2024)"},
      {"qwen3-30b-a3b", "llama",
       moe({48, 2048, 32, 4, 6144, kMoeSeq, 151936}, 128, 8, 768, true, 128), 1,
       "Qwen3-30B-A3B (Qwen team, 2025)"},
      {"qwen3-235b-a22b", "llama",
       moe({94, 4096, 64, 4, 12288, kMoeSeq, 151936}, 128, 8, 1536, true, 128), 1,
       "Qwen3-235B-A22B (Qwen team, 2025)"},
      {"gpt-oss-120b", "llama", gpt_oss_120b(), 1, "gpt-oss-120b (OpenAI, 2025)"},
      {"moe-tiny", "llama", moe({2, 64, 4, 2, 176, 32, 256}, 4, 2, 32, true), 4,
       "a small mixture-of-experts member for tests"},
      {"deepseek-v3", "llama",
       deepseek({61, 7168, 128, 128, 18432, kMoeSeq, 129280}, 256, 8, 2048, 3,
                {1536, 512, 128, 64, 128}, {8, 4}),
       1, "DeepSeek-V3 (DeepSeek-AI, 2024)"},
      {"deepseek-tiny", "llama",
       deepseek({3, 64, 4, 4, 176, 32, 256}, 4, 2, 32, 1, {32, 16, 16, 8, 16}, {0, 0}), 4,
       "a small DeepSeek-V3-shaped member for tests: latent attention, a dense first layer"},
  };
  return kMembers;
}

DataType family_dtype(const std::string& family) {
  // Megatron-LM's Table 1 runs trained in fp16 with fp32 master weights; Llama 2 in bf16.
  return family == "gpt" ? DataType::Float16 : DataType::BFloat16;
}

std::string describe(const FamilyMember& m) {
  const auto& z = m.shape;
  std::string kv = z.kv_heads == z.heads ? "" : fmt::format(" ({} key/value)", z.kv_heads);
  if (z.head_dim > 0) kv += fmt::format(" of size {}", z.head_dim);
  if (z.kv_lora > 0)
    kv = fmt::format(
        " of latent attention (query latent {}, key/value latent {}, heads of {} + {} "
        "rotary, values of {})",
        z.q_lora, z.kv_lora, z.qk_nope, z.qk_rope, z.v_head_dim);
  if (z.dense_layers_first > 0 && z.experts > 0)
    kv += fmt::format(", the first {} layers dense (ffn {})", z.dense_layers_first, z.ffn);
  if (z.shared_experts > 0) kv += fmt::format(", {} shared expert(s)", z.shared_experts);
  const std::string mlp = z.experts > 0 ? fmt::format("{} experts of ffn {} ({} per token)",
                                                      z.experts, z.expert_ffn, z.experts_per_token)
                                        : fmt::format("ffn {}", z.ffn);
  const char* kind = m.family == std::string("gpt") ? "GPT decoder"
                     : z.experts > 0                ? "Mixture-of-experts decoder"
                                                    : "Llama decoder";
  return fmt::format(
      "{} ({}): {} layers, hidden {}, {} heads{}, {}, sequence {}, vocabulary {}, {}; batch {} "
      "per device",
      kind, m.source, z.layers, z.hidden, z.heads, kv, mlp, z.seq, z.vocab,
      to_string(family_dtype(m.family)), m.default_batch);
}

// "gpt-1.7b[layers=4,hidden=512]": the sizes that differ from the member's.
std::string resize_suffix(const TransformerResize& r) {
  std::vector<std::string> parts;
  for (auto [value, key] : {std::pair{r.layers, "layers"},
                            {r.hidden, "hidden"},
                            {r.heads, "heads"},
                            {r.seq, "seq"},
                            {r.vocab, "vocab"},
                            {r.ffn, "ffn"},
                            {r.kv_heads, "kv_heads"},
                            {r.head_dim, "head_dim"}})
    if (value) parts.push_back(fmt::format("{}={}", key, value));
  if (r.tie_embeddings) parts.push_back("tied");
  return fmt::format("[{}]", fmt::join(parts, ","));
}

const FamilyMember* find_member(const std::string& name) {
  for (const auto& m : family_members())
    if (name == m.name) return &m;
  return nullptr;
}

std::int64_t round_up(std::int64_t v, std::int64_t multiple) {
  return (v + multiple - 1) / multiple * multiple;
}

TransformerSizes resized(const FamilyMember& m, const TransformerResize& r) {
  TransformerSizes z = m.shape;
  if (r.layers) z.layers = r.layers;
  if (r.heads) {
    const std::int64_t group = m.shape.heads / m.shape.kv_heads;
    z.kv_heads = r.heads % group == 0 ? r.heads / group : r.heads;
    z.heads = r.heads;
  }
  if (r.hidden) {
    z.ffn = m.family == std::string("gpt")
                ? 4 * r.hidden
                : round_up(m.shape.ffn * r.hidden / m.shape.hidden, r.hidden >= 1024 ? 256 : 8);
    z.hidden = r.hidden;
  }
  if (r.seq) z.seq = r.seq;
  if (r.vocab) z.vocab = r.vocab;
  if (r.ffn) z.ffn = r.ffn;
  if (r.kv_heads) z.kv_heads = r.kv_heads;
  // --head-dim sets the head size apart from the hidden size, as real models do (Qwen3-0.6B:
  // hidden 1024, 16 heads of 128); without it a member's heads are hidden / heads wide, which
  // follows --hidden and --heads.
  if (r.head_dim) z.head_dim = r.head_dim;
  if (r.tie_embeddings) z.tied = true;
  for (auto [value, flag] : {std::pair{z.layers, "--layers"},
                             {z.hidden, "--hidden"},
                             {z.heads, "--heads"},
                             {z.seq, "--seq"},
                             {z.vocab, "--vocab"},
                             {z.ffn, "--ffn"},
                             {z.kv_heads, "--kv-heads"}})
    if (value <= 0) throw InputError(fmt::format("{} {}: must be positive", flag, value));
  if (z.head_dim < 0) throw InputError(fmt::format("--head-dim {}: must be positive", z.head_dim));
  if (z.head_dim % 2 != 0 && m.family == std::string("llama"))
    throw InputError(fmt::format(
        "--head-dim {}: must be even (llama's rotary embeddings rotate pairs of a head's elements)",
        z.head_dim));
  if (z.head_dim == 0 && z.hidden % z.heads != 0)
    throw InputError(fmt::format(
        "--hidden {} is not divisible by {} attention heads (--head-dim sets the head size "
        "apart from the hidden size)",
        z.hidden, z.heads));
  if (z.heads % z.kv_heads != 0)
    throw InputError(
        fmt::format("--kv-heads {}: must divide the {} attention heads", z.kv_heads, z.heads));
  return z;
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> kEntries = {
      {{"mlp",
        "MLP of 16 dense 8192x8192 layers with Relu, softmax cross-entropy over 8192 classes "
        "(paper 6.1); batch 256 per device",
        256, ""},
       [](GraphBuilder& b, std::int64_t batch) { detail::build_mlp(b, batch); }},
      {{"mnist-mlp",
        "the paper's Figure 1 MLP on MNIST: 784-512-10, no biases, Relu; batch 64 per device", 64,
        ""},
       [](GraphBuilder& b, std::int64_t batch) { detail::build_mnist_mlp(b, batch); }},
      {{"resnext50",
        "ResNeXt-50 32x4d (torchvision resnext50_32x4d), ImageNet 224x224; batch 64 per device", 64,
        ""},
       [](GraphBuilder& b, std::int64_t batch) { detail::build_resnext50(b, batch); }},
      {{"inception-v3",
        "Inception-v3 (torchvision, no aux logits), ImageNet 299x299; batch 64 per device", 64, ""},
       detail::build_inception_v3},
      {{"bert-large",
        "BERT-Large: 24 layers, hidden 1024, 16 heads, sequence 512, classification head; "
        "batch 4 per device",
        4, ""},
       [](GraphBuilder& b, std::int64_t batch) { detail::build_bert_large(b, batch); }},
      {{"dlrm",
        "DLRM on Criteo Kaggle: 26 embedding tables x 64 dims (17.3 GB weights+gradients), "
        "concat interaction, MLPs 13-512-256-64 / 512-256-1; batch 1024 per device",
        1024, ""},
       [](GraphBuilder& b, std::int64_t batch) { detail::build_dlrm(b, batch); }},
      {{"xdl",
        "XDL-style ads CTR model on Criteo Kaggle: 26 embedding tables x 32 dims concatenated with "
        "dense features, MLP 1024-512-256-1; batch 1024 per device",
        1024, ""},
       [](GraphBuilder& b, std::int64_t batch) { detail::build_xdl(b, batch); }},
      {{"candle-uno",
        "CANDLE Uno drug response: 5 feature encoders of 8 dense 8192-wide layers, concat, "
        "4-layer top MLP, MSE (24 GB weights+gradients); batch 256 per device",
        256, ""},
       [](GraphBuilder& b, std::int64_t batch) { detail::build_candle_uno(b, batch); }},
  };
  return kEntries;
}

const Entry* find(const std::string& name) {
  const auto& all = entries();
  auto it =
      std::find_if(all.begin(), all.end(), [&](const Entry& e) { return e.info.name == name; });
  return it == all.end() ? nullptr : &*it;
}

}  // namespace

const std::vector<ModelInfo>& models() {
  static const std::vector<ModelInfo> kModels = [] {
    std::vector<ModelInfo> out;
    for (const Entry& e : entries()) out.push_back(e.info);
    for (const FamilyMember& m : family_members())
      out.push_back({m.name, describe(m), m.default_batch, m.family});
    return out;
  }();
  return kModels;
}

bool has_model(const std::string& name) { return find(name) != nullptr || find_member(name); }

Graph build(const std::string& name, std::int64_t batch) { return build(name, batch, {}); }

Graph build(const std::string& name, std::int64_t batch, const TransformerResize& resize) {
  if (const FamilyMember* member = find_member(name)) {
    Graph graph;
    graph.name = resize.empty() ? name : name + resize_suffix(resize);
    graph.batch_size = batch > 0 ? batch : member->default_batch;
    GraphBuilder builder(graph);
    const auto shape = resized(*member, resize);
    if (member->family == std::string("gpt"))
      detail::build_gpt(builder, graph.batch_size, shape);
    else
      detail::build_llama(builder, graph.batch_size, shape, DataType::Float32);
    set_compute_dtype(graph, family_dtype(member->family));
    return graph;
  }
  const Entry* entry = find(name);
  if (entry == nullptr) {
    std::string known;
    for (const ModelInfo& m : models()) known += (known.empty() ? "" : ", ") + m.name;
    throw InputError("unknown model '" + name + "'; the zoo has: " + known);
  }
  if (!resize.empty())
    throw InputError(fmt::format(
        "--layers, --hidden, --heads, --seq, --vocab, --ffn, --kv-heads, --head-dim and "
        "--tie-embeddings "
        "resize the gpt and llama families; '{}' is not one of them",
        name));
  Graph graph;
  graph.name = entry->info.name;
  graph.batch_size = batch > 0 ? batch : entry->info.default_batch;
  GraphBuilder builder(graph);
  entry->build(builder, graph.batch_size);
  return graph;
}

}  // namespace unity::zoo
