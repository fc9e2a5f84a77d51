// Graphs are built as a skeleton of compute operators whose edges carry short chains of parallel
// operators: every PCG is such a skeleton, and enumerating the chains edge by edge (checking each
// operator's shapes as it is added) visits far fewer dead ends than adding operators one at a time
// anywhere. Equal sub-results are shared (one node), and each graph is recorded once.
#include "enumerator.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "unity/rules/evaluator.h"

namespace unity::rules::gen {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

std::uint64_t input_hash(std::size_t i) { return mix(17, i); }
std::uint64_t node_hash(int tmpl, const std::vector<std::uint64_t>& in) {
  std::uint64_t h = mix(1000 + static_cast<std::uint64_t>(tmpl), 0);
  for (auto x : in) h = mix(h, x);
  return h;
}
std::uint64_t output_hash(std::uint64_t node, int out) { return mix(node, static_cast<std::uint64_t>(out)); }

bool is_dim_op(OpType t) {
  return t == OpType::Partition || t == OpType::Combine || t == OpType::Pipeline || t == OpType::Batch;
}

// Two parallel operators in a row that smaller rules already cover: an operator and its inverse, two
// splits of one dim (one split of the product), two replications or reductions.
bool redundant(const Operator& first, const Operator& second) {
  const OpType a = first.type, b = second.type;
  if (is_dim_op(a) && is_dim_op(b) && first.attrs.get_int("dim") == second.attrs.get_int("dim")) {
    if (a == b) return true;
    if ((a == OpType::Partition && b == OpType::Combine) || (a == OpType::Combine && b == OpType::Partition))
      return true;
    if ((a == OpType::Pipeline && b == OpType::Batch) || (a == OpType::Batch && b == OpType::Pipeline)) return true;
  }
  if (a == b && (a == OpType::Replicate || a == OpType::Reduce || a == OpType::AllReduce)) return true;
  return false;
}

class Builder {
 public:
  Builder(const Family& f, int max_ops, Enumeration& out) : f_(f), max_ops_(max_ops), out_(out) {
    for (const auto& t : f.compute) {
      const auto& info = op_info(t.type);
      std::vector<int> arities;
      if (t.type == OpType::Concat) arities = {2};
      else if (t.type == OpType::LayerNorm) arities = {1, 3};
      else
        for (int a = info.min_inputs; a <= std::min(info.max_inputs, std::max(info.min_inputs, 3)); ++a) arities.push_back(a);
      for (int a : arities) {
        template_of_[{static_cast<int>(&t - f.compute.data()), a}] = static_cast<int>(out_.templates.size());
        out_.templates.push_back(t);
        arity_.push_back(a);
      }
    }
    compute_templates_ = static_cast<int>(out_.templates.size());
    int max_rank = 0;
    for (const auto& in : f.inputs) max_rank = std::max(max_rank, in.value.shape.rank());
    std::vector<int> dims = f.dims;
    if (dims.empty())
      for (int d = 0; d < max_rank; ++d) dims.push_back(d);
    auto parallel = [&](Operator op) {
      out_.templates.push_back(std::move(op));
      arity_.push_back(1);
    };
    const std::int64_t two = 2;
    for (int d : dims) {
      parallel({OpType::Partition, {{"dim", std::int64_t{d}}, {"degree", two}}, ""});
      parallel({OpType::Combine, {{"dim", std::int64_t{d}}, {"degree", two}}, ""});
      if (f.temporal) {
        parallel({OpType::Pipeline, {{"dim", std::int64_t{d}}, {"degree", two}}, ""});
        parallel({OpType::Batch, {{"dim", std::int64_t{d}}, {"degree", two}}, ""});
      }
    }
    parallel({OpType::Replicate, {{"degree", two}}, ""});
    parallel({OpType::Reduce, {{"degree", two}}, ""});
    parallel({OpType::AllReduce, {{"degree", two}}, ""});
    for (const auto& t : out_.templates)
      out_.template_outputs.push_back(t.type == OpType::Split ? static_cast<int>(t.attrs.get_ints("sizes").size()) : 1);
    for (std::size_t i = 0; i < f.inputs.size(); ++i) {
      tensors_.push_back({f.inputs[i].value, input_hash(i), -1, 0, false});
      by_hash_[input_hash(i)] = static_cast<int>(i);
      skeleton_.push_back(static_cast<int>(i));
    }
  }

  void run() { compute_step(); }

 private:
  struct Tensor {
    ParallelValue value;
    std::uint64_t hash;
    int producer;  // op index, -1 for an input
    int uses;
    bool parallel;  // made by a parallel operator
  };

  bool is_compute(int tmpl) const { return tmpl < compute_templates_; }
  int op_count() const { return static_cast<int>(ops_.size()); }

  // Adds (or finds, when the graph computes it already) `tmpl` applied to `args`: the tensor index, or
  // -1 when the operator is undefined there or the budget is spent.
  struct Added {
    int tensor = -1;
    bool created = false;
  };
  Added add(int tmpl, const std::vector<int>& args) {
    std::vector<std::uint64_t> hs;
    for (int a : args) hs.push_back(tensors_[static_cast<std::size_t>(a)].hash);
    const std::uint64_t nh = node_hash(tmpl, hs);
    if (auto it = by_hash_.find(output_hash(nh, 0)); it != by_hash_.end()) return {it->second, false};
    if (op_count() >= max_ops_) return {};
    if (!is_compute(tmpl)) {
      if (parallel_count_ >= f_.max_parallel) return {};
      const Tensor& in = tensors_[static_cast<std::size_t>(args[0])];
      // Families of parallel operators alone keep the pairs: they are the cancellation rules.
      if (in.producer >= 0 && in.parallel && f_.max_compute > 0 &&
          redundant(out_.templates[ops_[static_cast<std::size_t>(in.producer)].tmpl], out_.templates[static_cast<std::size_t>(tmpl)]))
        return {};
    }
    std::vector<const ParallelValue*> in;
    for (int a : args) in.push_back(&tensors_[static_cast<std::size_t>(a)].value);
    auto r = evaluate(out_.templates[static_cast<std::size_t>(tmpl)], in);
    ++out_.visited;
    if (!r.ok()) return {};
    GenOp g;
    g.tmpl = static_cast<std::uint16_t>(tmpl);
    g.arity = static_cast<std::uint8_t>(args.size());
    for (std::size_t i = 0; i < args.size(); ++i) g.in[i] = static_cast<std::uint8_t>(args[i]);
    ops_.push_back(g);
    for (int a : args) ++tensors_[static_cast<std::size_t>(a)].uses;
    const int first = static_cast<int>(tensors_.size());
    for (std::size_t o = 0; o < r.outputs.size(); ++o) {
      const std::uint64_t h = output_hash(nh, static_cast<int>(o));
      by_hash_[h] = static_cast<int>(tensors_.size());
      tensors_.push_back({std::move(r.outputs[o]), h, op_count() - 1, 0, !is_compute(tmpl)});
    }
    graph_hash_ += mix(nh, 7);
    (is_compute(tmpl) ? compute_count_ : parallel_count_)++;
    return {first, true};
  }

  void undo() {
    const GenOp g = ops_.back();
    const int outputs = out_.template_outputs[g.tmpl];
    std::vector<std::uint64_t> hs;
    for (int i = 0; i < g.arity; ++i) hs.push_back(tensors_[g.in[i]].hash);
    graph_hash_ -= mix(node_hash(g.tmpl, hs), 7);
    for (int o = 0; o < outputs; ++o) {
      by_hash_.erase(tensors_.back().hash);
      tensors_.pop_back();
    }
    for (int i = 0; i < g.arity; ++i) --tensors_[g.in[i]].uses;
    (is_compute(g.tmpl) ? compute_count_ : parallel_count_)--;
    ops_.pop_back();
  }

  // Every chain of at most `length` parallel operators from tensor `t`; calls `then(end)` for each
  // (the empty chain included).
  void chains(int t, int length, const std::function<void(int)>& then) {
    then(t);
    if (length == 0) return;
    for (int tmpl = compute_templates_; tmpl < static_cast<int>(out_.templates.size()); ++tmpl) {
      const Added a = add(tmpl, {t});
      if (a.tensor < 0) continue;
      chains(a.tensor, length - 1, then);
      if (a.created) undo();
    }
  }

  bool allowed(int slot, int tensor) const {
    if (static_cast<std::size_t>(slot) >= f_.slot_inputs.size() || f_.slot_inputs[static_cast<std::size_t>(slot)].empty())
      return true;
    if (tensor >= static_cast<int>(f_.inputs.size())) return false;
    const auto& names = f_.slot_inputs[static_cast<std::size_t>(slot)];
    return std::find(names.begin(), names.end(), f_.inputs[static_cast<std::size_t>(tensor)].name) != names.end();
  }

  bool single_output(int output) const {
    for (std::size_t t = f_.inputs.size(); t < tensors_.size(); ++t)
      if (tensors_[t].uses == 0 && static_cast<int>(t) != output) return false;
    return true;
  }

  void record(int output) {
    if (!seen_.insert(graph_hash_ + mix(tensors_[static_cast<std::size_t>(output)].hash, 3)).second) return;
    GenGraph g;
    g.ops = ops_;
    g.output = output;
    g.fingerprint = fingerprint(tensors_[static_cast<std::size_t>(output)].value);
    g.compute_ops = compute_count_;
    if (output < static_cast<int>(f_.inputs.size())) g.inputs_used |= 1u << output;
    for (const auto& o : ops_)
      for (int i = 0; i < o.arity; ++i)
        if (o.in[i] < f_.inputs.size()) g.inputs_used |= 1u << o.in[i];
    out_.graphs.push_back(std::move(g));
  }

  // The graph so far ends in `last` (a compute output, or an input when there is none): record it
  // with every output chain.
  void record_outputs(int last) {
    const int length = compute_count_ == 0 ? f_.max_chain + 1 : f_.max_chain;
    chains(last, length, [&](int end) {
      if (single_output(end)) record(end);
    });
  }

  int input_index(const std::string& name) const {
    for (std::size_t i = 0; i < f_.inputs.size(); ++i)
      if (f_.inputs[i].name == name) return static_cast<int>(i);
    return -1;
  }

  // A fixed skeleton: its next operator, each argument through at most one parallel operator.
  void skeleton_step() {
    const auto& skeleton = *fixed_;
    if (compute_count_ == static_cast<int>(skeleton.size())) {
      record_outputs(last_compute_);
      return;
    }
    const SkeletonOp& s = skeleton[static_cast<std::size_t>(compute_count_)];
    const int tmpl = template_of_.at({s.tmpl, static_cast<int>(s.args.size())});
    std::vector<int> args(s.args.size());
    std::function<void(std::size_t)> pick = [&](std::size_t slot) {
      if (slot == args.size()) {
        const Added a = add(tmpl, args);
        if (a.tensor < 0 || !a.created) return;
        const int saved_last = last_compute_;
        last_compute_ = a.tensor;
        skeleton_outputs_.push_back(a.tensor);
        skeleton_step();
        skeleton_outputs_.pop_back();
        last_compute_ = saved_last;
        undo();
        return;
      }
      const std::string& ref = s.args[slot];
      const int base = ref[0] == '#' ? skeleton_outputs_.at(static_cast<std::size_t>(std::stoi(ref.substr(1))))
                                     : input_index(ref);
      chains(base, 1, [&](int end) {
        args[slot] = end;
        pick(slot + 1);
      });
    };
    pick(0);
  }

  void compute_step() {
    if (!f_.skeletons.empty()) {
      if (compute_count_ > 0) {
        skeleton_step();
        return;
      }
      for (const auto& sk : f_.skeletons) {
        fixed_ = &sk;
        skeleton_step();
      }
      return;
    }
    // Outputs: the last compute result, or each input on its own (parallel operators only).
    if (compute_count_ == 0) {
      for (std::size_t i = 0; i < f_.inputs.size(); ++i) record_outputs(static_cast<int>(i));
    } else {
      record_outputs(last_compute_);
    }
    if (compute_count_ >= f_.max_compute) return;
    const std::vector<int> skeleton = skeleton_;
    for (int tmpl = 0; tmpl < compute_templates_; ++tmpl) {
      const int arity = arity_[static_cast<std::size_t>(tmpl)];
      std::vector<int> args(static_cast<std::size_t>(arity));
      // Each argument: a skeleton tensor through at most one parallel operator.
      std::function<void(int)> pick = [&](int slot) {
        if (slot == arity) {
          const Added a = add(tmpl, args);
          if (a.tensor < 0 || !a.created) return;
          const int saved_last = last_compute_;
          last_compute_ = a.tensor;
          for (int o = 0; o < out_.template_outputs[static_cast<std::size_t>(tmpl)]; ++o)
            skeleton_.push_back(a.tensor + o);
          compute_step();
          skeleton_.resize(skeleton_.size() - static_cast<std::size_t>(out_.template_outputs[static_cast<std::size_t>(tmpl)]));
          last_compute_ = saved_last;
          undo();
          return;
        }
        if (static_cast<std::size_t>(slot) < f_.tied.size() && f_.tied[static_cast<std::size_t>(slot)] >= 0) {
          args[static_cast<std::size_t>(slot)] = args[static_cast<std::size_t>(f_.tied[static_cast<std::size_t>(slot)])];
          pick(slot + 1);
          return;
        }
        for (int s : skeleton) {
          if (!allowed(slot, s)) continue;
          chains(s, 1, [&](int end) {
            args[static_cast<std::size_t>(slot)] = end;
            pick(slot + 1);
          });
        }
      };
      pick(0);
    }
  }

  const Family& f_;
  const int max_ops_;
  Enumeration& out_;
  std::vector<int> arity_;
  std::map<std::pair<int, int>, int> template_of_;  // (family compute index, arity) -> template
  std::vector<int> skeleton_outputs_;
  const std::vector<SkeletonOp>* fixed_ = nullptr;  // the skeleton being enumerated, if any
  int compute_templates_ = 0;
  std::vector<Tensor> tensors_;
  std::unordered_map<std::uint64_t, int> by_hash_;
  std::vector<GenOp> ops_;
  std::vector<int> skeleton_;
  int last_compute_ = -1;
  int compute_count_ = 0, parallel_count_ = 0;
  std::uint64_t graph_hash_ = 0;
  std::unordered_set<std::uint64_t> seen_;
};

}  // namespace

Enumeration enumerate(const Family& family, int max_ops) {
  Enumeration e;
  e.family = &family;
  Builder b(family, max_ops + family.extra_ops, e);
  b.run();
  return e;
}

std::vector<std::uint64_t> tensor_hashes(const Enumeration& e, const GenGraph& g) {
  std::vector<std::uint64_t> h;
  for (std::size_t i = 0; i < e.family->inputs.size(); ++i) h.push_back(input_hash(i));
  for (const auto& o : g.ops) {
    std::vector<std::uint64_t> in;
    for (int i = 0; i < o.arity; ++i) in.push_back(h[o.in[i]]);
    const std::uint64_t nh = node_hash(o.tmpl, in);
    for (int out = 0; out < e.template_outputs[o.tmpl]; ++out) h.push_back(output_hash(nh, out));
  }
  return h;
}

std::vector<ParallelValue> tensor_values(const Enumeration& e, const GenGraph& g) {
  std::vector<ParallelValue> v;
  for (const auto& in : e.family->inputs) v.push_back(in.value);
  for (const auto& o : g.ops) {
    std::vector<const ParallelValue*> in;
    for (int i = 0; i < o.arity; ++i) in.push_back(&v[o.in[i]]);
    auto r = evaluate(e.templates[o.tmpl], in);
    for (auto& out : r.outputs) v.push_back(std::move(out));
  }
  return v;
}

std::string describe(const Enumeration& e, const GenGraph& g) {
  std::vector<std::string> names;
  for (const auto& in : e.family->inputs) names.push_back(in.name);
  for (const auto& o : g.ops) {
    const Operator& op = e.templates[o.tmpl];
    std::string attrs;
    for (const auto& [k, v] : op.attrs.items()) attrs += fmt::format("{}{}={}", attrs.empty() ? "" : ",", k, to_string(v));
    std::string s = fmt::format("{}[{}](", to_string(op.type), attrs);
    for (int i = 0; i < o.arity; ++i) s += (i ? ", " : "") + names[o.in[i]];
    s += ")";
    for (int out = 0; out < e.template_outputs[o.tmpl]; ++out)
      names.push_back(e.template_outputs[o.tmpl] > 1 ? fmt::format("{}:{}", s, out) : s);
  }
  return names[static_cast<std::size_t>(g.output)];
}

}  // namespace unity::rules::gen
