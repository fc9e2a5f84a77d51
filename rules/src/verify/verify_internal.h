#pragma once
// Verification with a caller-owned prover, so that a thread verifying many rules (the generator)
// asserts the theory once.
#include "prover.h"
#include "unity/rules/verifier.h"

namespace unity::rules {

RuleVerification verify_with(const Rule& rule, const VerifyOptions& options, spec::Prover& prover);

}  // namespace unity::rules
