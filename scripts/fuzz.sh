#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz: clang, ASan, UBSan) into build-fuzz/ (or
# $UNITY_FUZZ_BUILD_DIR) and runs each over its seed corpus (tests/fuzz/corpus/<fuzzer>/).
#   scripts/fuzz.sh [SECONDS]     each fuzzer for SECONDS (default 60) with a random seed
#   scripts/fuzz.sh --ci          each fuzzer for its fixed number of runs below, seed 1 (CI)
#   UNITY_FUZZERS_ONLY="fuzz_plan_json fuzz_rule_json" scripts/fuzz.sh 600   some of them
# Inputs a run finds interesting go to build-fuzz/fuzz-corpus/<fuzzer>/, never into the checked-in
# corpus; a finding is written to build-fuzz/fuzz-findings/<fuzzer>/ and fails the script. Add a
# finding to the corpus as tests/fuzz/corpus/<fuzzer>/regression-<what>, with its fix.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${UNITY_FUZZ_BUILD_DIR:-$root/build-fuzz}
jobs=${UNITY_JOBS:-$(nproc)}

# CI's run counts, fixed so that CI is repeatable (with -seed=1): each fuzzer takes some 10-20 s on
# a 2-core CI machine (the joint search runs a whole search per input, the loaders thousands of
# inputs a second), all of them together about 1.5 minutes.
declare -A ci_runs=(
  [fuzz_onnx_import]=15000
  [fuzz_model_json]=40000
  [fuzz_plan_json]=25000
  [fuzz_rule_json]=80000
  [fuzz_machine_json]=80000
  [fuzz_project_open]=10000
  [fuzz_joint_search]=300
)

mode=time
seconds=60
case "${1:-}" in
  --ci) mode=ci ;;
  "") ;;
  *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS] | --ci" >&2; exit 64 ;;
  *) seconds=$1 ;;
esac

CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUNITY_FUZZERS=ON -DUNITY_GUI=OFF -DUNITY_TESTS=OFF >/dev/null
cmake --build "$build" -j "$jobs"

fuzzers=${UNITY_FUZZERS_ONLY:-$(printf '%s\n' "${!ci_runs[@]}" | sort)}
failed=()
for f in $fuzzers; do
  corpus=$root/tests/fuzz/corpus/$f
  work=$build/fuzz-corpus/$f
  findings=$build/fuzz-findings/$f
  mkdir -p "$work" "$findings"
  # A leak report from LeakSanitizer is a finding too, and so is an input that runs for 2 minutes: a
  # hang, not slowness (the sanitizers slow the importer's constant folding some 40-fold, so that a
  # legitimate 4M-element fold takes seconds here, more on a loaded machine).
  args=(-timeout=120 -rss_limit_mb=2560 -artifact_prefix="$findings/" -print_final_stats=1)
  if [ "$mode" = ci ]; then
    args+=(-seed=1 -runs="${ci_runs[$f]}")
  else
    args+=(-max_total_time="$seconds")
  fi
  echo "fuzz: $f ${args[*]: -1}"
  start=$SECONDS
  # The work folder comes first: libFuzzer adds what it finds there and only reads the seeds.
  if ! "$build/fuzz/$f" "${args[@]}" "$work" "$corpus" >"$findings/log.txt" 2>&1; then
    failed+=("$f")
    tail -n 60 "$findings/log.txt"
  fi
  grep -E '^stat::number_of_executed_units|^Done ' "$findings/log.txt" | tr '\n' ' ' || true
  echo "($((SECONDS - start)) s)"
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FINDINGS in ${failed[*]} (inputs in $build/fuzz-findings/)" >&2
  exit 1
fi
echo "fuzz: no findings"
