#pragma once
// How a chain of segments is cut into the contiguous chunks a pipeline's ranks hold: by layer
// counts as Megatron-LM cuts them (a published layout), or balanced by time (the joint search).
#include <utility>
#include <vector>

namespace unity::pipeline_layouts {

// Where each of `count` chunks' layers end (exclusive), as Megatron-LM cuts `layers` layers: the
// same number in each, and where they do not divide, one layer fewer in the chunks at the ends,
// alternately first and last, inwards (Megatron-Core's --decoder-first/last-pipeline-num-layers;
// Llama 3 405B's 126 layers on 16 stages: 7, 8 x 14, 7). The first and last chunk also hold the
// embedding and the head, so they are the ones to lighten.
std::vector<int> chunk_layer_ends(int layers, int count);

// The first and last segment of each of `count` chunks, cut at chunk_layer_ends of `layers`,
// where `layer_of` gives each segment's layer as Megatron-LM deals them; the last chunk takes
// what is left.
std::vector<std::pair<int, int>> layer_count_chunks(const std::vector<int>& layer_of, int layers,
                                                    int count);

// The first and last segment of each of `count` chunks whose longest time `t` is least (a greedy
// split, binary-searched on its bottleneck); every chunk gets a segment where there are enough.
std::vector<std::pair<int, int>> balanced_chunks(const std::vector<double>& t, int count);

}  // namespace unity::pipeline_layouts
