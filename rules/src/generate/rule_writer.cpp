#include "rule_writer.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>

namespace unity::rules::gen {
namespace {

using nlohmann::json;

// Attributes a tensor's sizes fix: left open in a source pattern, copied to the target.
bool size_determined(const std::string& key) {
  return key == "out_features" || key == "out_channels" || key == "num_entries" ||
         key == "embedding_dim" || key == "kernel";
}
// Attributes a Symbolic rule reads as symbols: where data goes, and configuration that rarely
// decides whether a rewrite holds (a General rule makes every attribute a symbol, e.g. the
// activation too).
bool symbolic_attr(const std::string& key) {
  return key == "axis" || key == "shape" || key == "sizes" || key == "padding" || key == "stride" ||
         key == "dilation" || key == "scalar" || key == "rate" || key == "epsilon";
}

std::string short_name(OpType t) {
  switch (t) {
    case OpType::Partition:
      return "partition";
    case OpType::Combine:
      return "combine";
    case OpType::Replicate:
      return "replicate";
    case OpType::Reduce:
      return "reduce";
    case OpType::AllReduce:
      return "allreduce";
    default: {
      std::string s(to_string(t));
      std::transform(s.begin(), s.end(), s.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      return s;
    }
  }
}

json attr_json(const AttrValue& v) {
  return std::visit([](const auto& x) { return json(x); }, v);
}

RuleAttr literal(const AttrValue& v) { return {RuleAttr::Kind::Literal, attr_json(v), ""}; }
RuleAttr symbol(const std::string& n) { return {RuleAttr::Kind::Symbol, {}, n}; }
RuleAttr parameter(const std::string& n) { return {RuleAttr::Kind::Parameter, {}, n}; }

class Writer {
 public:
  Writer(const Enumeration& e, const GenGraph& src, const GenGraph& tgt, Level level)
      : e_(e),
        src_(src),
        tgt_(tgt),
        level_(level),
        src_values_(tensor_values(e, src)),
        tgt_values_(tensor_values(e, tgt)) {}

  std::optional<Rule> write() {
    Rule r;
    // Inputs: the source's, named after their family input.
    std::map<std::string, int> base_uses;
    for (std::size_t i = 0; i < e_.family->inputs.size(); ++i) {
      if (!(src_.inputs_used & (1u << i))) continue;
      const std::string& base = e_.family->inputs[i].base;
      const int n = ++base_uses[base];
      input_names_[static_cast<int>(i)] = n == 1 ? base : fmt::format("{}{}", base, n);
    }
    // In order of first use by the source, as a reader expects.
    for (const auto& o : src_.ops)
      for (int i = 0; i < o.arity; ++i)
        if (o.in[i] < e_.family->inputs.size()) add_input(r, o.in[i]);
    if (src_.output < static_cast<int>(e_.family->inputs.size()))
      return std::nullopt;  // empty source

    has_degree_symbol_ = false;
    for (const auto& o : src_.ops)
      if (is_parallel_op(e_.templates[o.tmpl].type)) has_degree_symbol_ = true;

    std::vector<std::string> src_refs = refs(src_);
    for (std::size_t k = 0; k < src_.ops.size(); ++k) {
      const GenOp& o = src_.ops[k];
      RuleNode n =
          node(o, src_refs, unique_name(short_name(e_.templates[o.tmpl].type), src_names_));
      source_attrs(n, e_.templates[o.tmpl]);
      source_nodes_.push_back({&e_.templates[o.tmpl], n.name, o.tmpl});
      name_tensor(src_refs, src_, k, n.name);
      r.source.nodes.push_back(std::move(n));
    }
    r.source.outputs = {src_refs[static_cast<std::size_t>(src_.output)]};

    std::vector<std::string> tgt_refs = refs(tgt_);
    for (std::size_t k = 0; k < tgt_.ops.size(); ++k) {
      const GenOp& o = tgt_.ops[k];
      RuleNode n =
          node(o, tgt_refs, unique_name("t_" + short_name(e_.templates[o.tmpl].type), tgt_names_));
      if (!target_attrs(n, e_.templates[o.tmpl], o)) return std::nullopt;
      name_tensor(tgt_refs, tgt_, k, n.name);
      r.target.nodes.push_back(std::move(n));
    }
    const std::string out = tgt_refs[static_cast<std::size_t>(tgt_.output)];
    if (out.empty()) return std::nullopt;
    r.target.outputs = {out};

    drop_unused_symbols(r);
    for (const auto& p : params_) {
      r.parameters.push_back(p.name);
      r.parameter_domains.push_back(p);
    }
    bool parallel = false;
    for (const auto* g : {&src_, &tgt_})
      for (const auto& o : g->ops) parallel |= is_parallel_op(e_.templates[o.tmpl].type);
    r.kind = parallel ? RuleKind::Parallel : RuleKind::Algebraic;
    r.description = fmt::format("{} = {}", describe(e_, src_), describe(e_, tgt_));
    return r;
  }

 private:
  // A compute operator's attribute symbol that nothing else reads constrains nothing: the pattern
  // leaves the attribute out instead, so that it also matches an operator that leaves the attribute
  // at its default (a convolution without "padding"), which a symbol does not bind.
  static void drop_unused_symbols(Rule& r) {
    std::map<std::string, int> uses;
    for (const auto* g : {&r.source, &r.target})
      for (const auto& n : g->nodes)
        for (const auto& [key, a] : n.attrs)
          if (a.kind == RuleAttr::Kind::Symbol) ++uses[a.name];
    for (auto& n : r.source.nodes) {
      if (is_parallel_op(n.op)) continue;
      for (auto it = n.attrs.begin(); it != n.attrs.end();)
        it = it->second.kind == RuleAttr::Kind::Symbol && uses[it->second.name] == 1
                 ? n.attrs.erase(it)
                 : std::next(it);
    }
  }

  void add_input(Rule& r, int i) {
    const std::string& name = input_names_.at(i);
    if (std::find(r.inputs.begin(), r.inputs.end(), name) == r.inputs.end())
      r.inputs.push_back(name);
  }

  std::vector<std::string> refs(const GenGraph& g) {
    std::vector<std::string> out(e_.family->inputs.size());
    for (const auto& [i, name] : input_names_) out[static_cast<std::size_t>(i)] = name;
    std::size_t tensors = out.size();
    for (const auto& o : g.ops) tensors += static_cast<std::size_t>(e_.template_outputs[o.tmpl]);
    out.resize(tensors);
    return out;
  }

  void name_tensor(std::vector<std::string>& refs, const GenGraph& g, std::size_t op,
                   const std::string& name) {
    std::size_t first = e_.family->inputs.size();
    for (std::size_t k = 0; k < op; ++k)
      first += static_cast<std::size_t>(e_.template_outputs[g.ops[k].tmpl]);
    const int outputs = e_.template_outputs[g.ops[op].tmpl];
    for (int o = 0; o < outputs; ++o)
      refs[first + static_cast<std::size_t>(o)] =
          outputs > 1 ? fmt::format("{}:{}", name, o) : name;
  }

  static std::string unique_name(const std::string& base, std::set<std::string>& used) {
    std::string n = base;
    for (int i = 2; used.count(n); ++i) n = fmt::format("{}_{}", base, i);
    used.insert(n);
    return n;
  }

  RuleNode node(const GenOp& o, const std::vector<std::string>& refs, const std::string& name) {
    RuleNode n;
    n.name = name;
    n.op = e_.templates[o.tmpl].type;
    for (int i = 0; i < o.arity; ++i) n.inputs.push_back(refs[o.in[i]]);
    return n;
  }

  bool symbolic_dims() const { return level_ == Level::General || level_ == Level::Symbolic; }

  std::string dim_symbol(std::int64_t v) {
    auto it = dim_symbols_.find(v);
    if (it != dim_symbols_.end()) return it->second;
    const std::string s = dim_symbols_.empty() ? "k" : fmt::format("k{}", dim_symbols_.size() + 1);
    dim_symbols_[v] = s;
    return s;
  }

  void source_attrs(RuleNode& n, const Operator& op) {
    for (const auto& [key, v] : op.attrs.items()) {
      if (is_parallel_op(op.type)) {
        if (key == "degree")
          n.attrs[key] = level_ == Level::Literal ? literal(v) : symbol("d");
        else
          n.attrs[key] =
              symbolic_dims() ? symbol(dim_symbol(std::get<std::int64_t>(v))) : literal(v);
        continue;
      }
      if (size_determined(key)) continue;
      if (level_ == Level::General || (level_ == Level::Symbolic && symbolic_attr(key))) {
        const std::string s =
            fmt::format("{}{}", key == "axis" ? "a" : "s", attr_symbols_.size() + 1);
        attr_symbols_.push_back({key, v, s});
        n.attrs[key] = symbol(s);
        continue;
      }
      n.attrs[key] = literal(v);
    }
  }

  // The name of a rule input or source node of the given rank, for a dim parameter's domain.
  std::string tensor_of_rank(int rank) {
    const auto& out = src_values_[static_cast<std::size_t>(src_.output)];
    if (out.shape.rank() == rank) return source_nodes_.back().name;
    for (const auto& [i, name] : input_names_)
      if (e_.family->inputs[static_cast<std::size_t>(i)].value.shape.rank() == rank) return name;
    return "";
  }

  bool target_attrs(RuleNode& n, const Operator& op, const GenOp& o) {
    if (is_parallel_op(op.type)) {
      for (const auto& [key, v] : op.attrs.items()) {
        if (key == "degree") {
          if (level_ == Level::Literal)
            n.attrs[key] = literal(v);
          else if (has_degree_symbol_)
            n.attrs[key] = symbol("d");
          else
            n.attrs[key] = parameter(degree_param());
          continue;
        }
        const std::int64_t dim = std::get<std::int64_t>(v);
        if (!symbolic_dims()) {
          n.attrs[key] = literal(v);
        } else if (dim_symbols_.count(dim)) {
          n.attrs[key] = symbol(dim_symbols_.at(dim));
        } else {
          const int rank = tgt_values_[o.in[0]].shape.rank();
          const std::string of = tensor_of_rank(rank);
          if (of.empty())
            n.attrs[key] = literal(v);
          else
            n.attrs[key] = parameter(dim_param(dim, of));
        }
      }
      return true;
    }
    // Copy the attributes of a source node of the same operator, overriding what differs. The node
    // to copy: one whose size-determined attributes agree (a Megatron MLP block holds two Linears
    // of different widths), the same template first (the same operator, fused or not), then the one
    // that differs in fewest attributes.
    const SourceNode* copy = nullptr;
    int best = 0;
    bool same_type = false;
    for (const auto& s : source_nodes_) {
      if (s.op->type != op.type) continue;
      same_type = true;
      int differing = 0;
      bool usable = true;
      for (const auto& [key, v] : op.attrs.items()) {
        if (s.op->attrs.has(key) && s.op->attrs.items().at(key) == v) continue;
        if (size_determined(key)) usable = false;
        ++differing;
      }
      for (const auto& [key, v] : s.op->attrs.items())
        if (!op.attrs.has(key)) usable = false;  // an attribute the copy would add
      const int score = (s.tmpl == o.tmpl ? 0 : 100) + differing;
      if (usable && (!copy || score < best)) {
        copy = &s;
        best = score;
      }
    }
    if (copy) {
      n.copy_of = copy->name;
      for (const auto& [key, v] : op.attrs.items())
        if (!copy->op->attrs.has(key) || copy->op->attrs.items().at(key) != v)
          n.attrs[key] = literal(v);
      return true;
    }
    if (same_type) return false;
    for (const auto& [key, v] : op.attrs.items()) {
      if (size_determined(key)) return false;
      bool bound = false;
      for (const auto& s : attr_symbols_)
        if (s.key == key && s.value == v) {
          n.attrs[key] = symbol(s.symbol);
          bound = true;
        }
      if (!bound) n.attrs[key] = literal(v);
    }
    return true;
  }

  std::string degree_param() {
    for (const auto& p : params_)
      if (p.name == "d") return "d";
    params_.push_back({"d", RuleParameter::Domain::Degree, ""});
    return "d";
  }

  std::string dim_param(std::int64_t value, const std::string& of) {
    auto it = dim_params_.find(value);
    if (it != dim_params_.end()) return it->second;
    const std::string name = dim_params_.empty() ? "k" : fmt::format("k{}", dim_params_.size() + 1);
    dim_params_[value] = name;
    params_.push_back({name, RuleParameter::Domain::Dim, of});
    return name;
  }

  struct AttrSymbol {
    std::string key;
    AttrValue value;
    std::string symbol;
  };

  const Enumeration& e_;
  const GenGraph& src_;
  const GenGraph& tgt_;
  const Level level_;
  std::vector<ParallelValue> src_values_, tgt_values_;
  std::map<int, std::string> input_names_;
  std::set<std::string> src_names_, tgt_names_;
  struct SourceNode {
    const Operator* op;
    std::string name;
    int tmpl;
  };
  std::vector<SourceNode> source_nodes_;
  std::map<std::int64_t, std::string> dim_symbols_;
  std::map<std::int64_t, std::string> dim_params_;
  std::vector<AttrSymbol> attr_symbols_;
  std::vector<RuleParameter> params_;
  bool has_degree_symbol_ = false;
};

std::string attr_key(const RuleAttr& a, std::map<std::string, std::string>& rename) {
  if (a.kind == RuleAttr::Kind::Literal) return a.literal.dump();
  const std::string prefix = a.kind == RuleAttr::Kind::Symbol ? "$" : "%";
  auto it = rename.find(prefix + a.name);
  if (it == rename.end())
    it = rename.emplace(prefix + a.name, fmt::format("{}{}", prefix, rename.size())).first;
  return it->second;
}

}  // namespace

std::optional<Rule> write_rule(const Enumeration& e, const GenGraph& source, const GenGraph& target,
                               Level level) {
  return Writer(e, source, target, level).write();
}

std::string rule_key(const Rule& rule) {
  std::map<std::string, std::string> rename;  // inputs, nodes, symbols, parameters by first use
  auto name = [&](const std::string& ref) {
    const auto colon = ref.find(':');
    const std::string base = ref.substr(0, colon);
    auto it = rename.find(base);
    if (it == rename.end()) it = rename.emplace(base, fmt::format("n{}", rename.size())).first;
    return it->second + (colon == std::string::npos ? "" : ref.substr(colon));
  };
  std::string key;
  for (const auto* g : {&rule.source, &rule.target}) {
    for (const auto& n : g->nodes) {
      key += std::string(to_string(n.op)) + "(";
      for (const auto& in : n.inputs) key += name(in) + ",";
      key += ")[";
      for (const auto& [k, a] : n.attrs) key += k + "=" + attr_key(a, rename) + ";";
      if (!n.copy_of.empty()) key += "copy=" + name(n.copy_of);
      key += "]" + name(n.name) + " ";
    }
    for (const auto& o : g->outputs) key += "->" + name(o);
    key += " | ";
  }
  for (const auto& p : rule.parameter_domains)
    if (p.domain == RuleParameter::Domain::Dim) key += "dim(" + name(p.of) + ")";
  return key;
}

int rule_size(const Rule& rule) {
  return static_cast<int>(rule.source.nodes.size() + rule.target.nodes.size());
}

}  // namespace unity::rules::gen
