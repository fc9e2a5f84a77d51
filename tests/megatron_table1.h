#pragma once
// Megatron-LM's Table 1 (Narayanan et al., SC'21; ../shared/reference/megatron-lm-table1.md): ten
// GPT runs on Selene, each with its tensor- and pipeline-parallel sizes and the TFLOP/s per GPU it
// reached. The test checks the cost model against them; the benchmark prints the README table.
#include "unity/core/plan/plan_optimizer.h"

namespace unity::megatron {

struct Table1Row {
  const char* model;  // the zoo's name
  int gpus, batch, tp, pp;
  double published;  // TFLOP/s per GPU
};

inline constexpr Table1Row kTable1[] = {
    {"gpt-1.7b", 32, 512, 1, 1, 137},     {"gpt-3.6b", 64, 512, 2, 1, 138},
    {"gpt-7.5b", 128, 512, 4, 1, 142},    {"gpt-18b", 256, 1024, 8, 1, 135},
    {"gpt-39b", 512, 1536, 8, 2, 138},    {"gpt-76b", 1024, 1792, 8, 4, 140},
    {"gpt-145b", 1536, 2304, 8, 8, 148},  {"gpt-310b", 1920, 2160, 8, 16, 155},
    {"gpt-530b", 2520, 2520, 8, 35, 163}, {"gpt-1t", 3072, 3072, 8, 64, 163},
};

// Megatron-LM's layout of a row: `unity optimize --mode expert --tp t --pp p`.
inline OptimizeOptions layout_of(const Table1Row& row) {
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = row.tp;
  o.layout.pipeline_stages = row.pp;
  return o;
}

}  // namespace unity::megatron
