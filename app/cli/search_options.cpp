#include "search_options.h"

namespace unity::cli {

void add_search_options(CLI::App* cmd, OptimizeOptions& o) {
  cmd->add_option("--alpha", o.alpha, "Prune candidates worse than alpha x the best")
      ->check(CLI::Range(1.0, 10.0))
      ->capture_default_str();
  cmd->add_option("--budget", o.budget, "Candidates costed per search phase")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--rules", o.rule_files, "Rule files to search with (default: built-in)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--pin", o.pins,
                  "Apply this rule (RULE or RULE@NODE) wherever it matches, in every plan");
  cmd->add_option("--veto", o.vetoes,
                  "Never apply this rule (RULE, RULE@NODE or a pattern such as 'mlp_*')");
  cmd->add_flag("!--no-split", o.split, "Search the whole graph at once (no graph splitting)");
  cmd->add_option("--min-piece", o.min_piece, "Smallest piece graph splitting cuts off (operators)")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  cmd->add_option("--beam", o.beam, "Partitionings of each cut's tensor carried to the next piece")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--optimizer", o.optimizer, "Optimizer whose state the memory model counts")
      ->check(CLI::IsMember({"sgd", "sgd-momentum", "adam"}))
      ->capture_default_str();
}

void add_batch_option(CLI::App* cmd, std::int64_t& batch) {
  cmd->add_option("--batch", batch,
                  "Global batch of a zoo model (default: the paper's per-device batch x devices)")
      ->check(CLI::PositiveNumber);
}

}  // namespace unity::cli
