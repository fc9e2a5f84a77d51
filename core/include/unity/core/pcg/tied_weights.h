#pragma once
// Tied weights: one table read by two operators, as a language model's head reads the token
// embedding's table (Megatron-LM's default, and Hugging Face's `tie_word_embeddings`). The graph
// keeps a Weight for each reader, the second with the attribute "tied_to" naming the first; they
// are one tensor wherever both are held on one device: counted once, updated once, synchronised
// once. Held apart (the first and the last pipeline stage), each device keeps a copy and the
// copies' gradients are summed between them after the backward pass, as Megatron-LM does.
#include <optional>
#include <set>
#include <string>

#include "unity/core/pcg/graph.h"

namespace unity {

inline constexpr const char* kTiedTo = "tied_to";

// The Weight `weight` is tied to, where the graph holds it.
std::optional<NodeId> tied_partner(const Graph& g, NodeId weight);

// The weights whose partner the graph holds: the second readers' tables, stored by the partner.
std::set<NodeId> tied_copies(const Graph& g);

// Marks `weight` (a Weight node) as tied to the Weight named `to`.
void tie_weight(Graph& g, NodeId weight, const std::string& to);

}  // namespace unity
