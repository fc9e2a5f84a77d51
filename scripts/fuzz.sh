#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz: clang, ASan, UBSan) into build-fuzz/ (or
# $UNITY_FUZZ_BUILD_DIR) and runs each over its seed corpus (tests/fuzz/corpus/<fuzzer>/).
#   scripts/fuzz.sh [SECONDS]     each fuzzer for SECONDS (default 60) with a random seed
#   scripts/fuzz.sh --ci          each fuzzer for its fixed number of runs below (the test command)
#   UNITY_FUZZERS_ONLY="fuzz_plan_json fuzz_rule_json" scripts/fuzz.sh 600   some of them
# --ci runs the same inputs every time: seed 1, a fixed count, the seeds in name order and an
# emptied work folder, so that nothing a previous run found changes what this one tries. Three more
# things made runs of the same inputs differ, each found by comparing two runs' inputs
# (UNITY_FUZZ_TRACE=FILE, tests/fuzz/fuzz_contract.h): libFuzzer reads its work folder again every
# second (-reload=0: a clock decided when a reduced input's old file ran once more); heap addresses
# change the order of pointers, and so the branches the search takes, every run under address space
# randomisation (setarch -R turns it off for the fuzzer); and the values compared at run time,
# pointers and clocks among them, that libFuzzer mixes into its mutations (-use_cmp=0). Each fuzzer
# prints the count and a digest of the inputs it ran ("fuzz inputs: N, digest D") to compare two
# runs by (docs/testing.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${UNITY_FUZZ_BUILD_DIR:-$root/build-fuzz}
jobs=${UNITY_JOBS:-$(nproc)}

# The test command's run counts: each fuzzer takes some 10-20 s on a 2-core CI machine (the joint
# search runs a whole search per input, the loaders thousands of inputs a second), all of them
# together about 1.5 minutes.
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

# Runs fuzzer $1 and writes what it reports to its findings folder (summary.txt; log.txt is
# libFuzzer's whole output); exit status 1 on a finding.
run_fuzzer() {
  local f=$1
  local corpus=$root/tests/fuzz/corpus/$f
  local work=$build/fuzz-corpus/$f
  local findings=$build/fuzz-findings/$f
  local what runner folders
  # A leak report from LeakSanitizer is a finding too, and so is an input that runs for 2 minutes: a
  # hang, not slowness (the sanitizers slow the importer's constant folding some 40-fold, so that a
  # legitimate 4M-element fold takes seconds here, more on a loaded machine).
  local args=(-timeout=120 -rss_limit_mb=2560 -artifact_prefix="$findings/" -print_final_stats=1)
  if [ "$mode" = ci ]; then
    rm -rf "$work" "$findings"
    mkdir -p "$work" "$findings"
    # libFuzzer reads a corpus folder in the file system's order, which differs between machines;
    # a list in name order does not. It executes the seeds, then mutates what it keeps in $work.
    find "$corpus" -type f | LC_ALL=C sort | paste -sd, - >"$findings/seeds.txt"
    args+=(-seed=1 -runs="${ci_runs[$f]}" -reload=0 -use_cmp=0 -seed_inputs=@"$findings/seeds.txt")
    folders=("$work")
    what="-seed=1 -runs=${ci_runs[$f]}"
    runner=(setarch "$(uname -m)" -R)
  else
    mkdir -p "$work" "$findings"
    args+=(-max_total_time="$seconds")
    # The work folder comes first: libFuzzer adds what it finds there and only reads the seeds.
    folders=("$work" "$corpus")
    what="-max_total_time=$seconds"
    runner=()
  fi
  local summary=$findings/summary.txt
  echo "fuzz: $f $what" >"$summary"
  # A machine that refuses to turn randomisation off runs the fuzzer as it is.
  if [ ${#runner[@]} -gt 0 ] && ! "${runner[@]}" true 2>/dev/null; then
    echo "fuzz: setarch -R is not permitted here: heap addresses may change which inputs run" \
      >>"$summary"
    runner=()
  fi
  local start=$SECONDS status=0
  # In the repository's root: fuzz_joint_search reads rules/ from there.
  (cd "$root" && "${runner[@]}" "$build/fuzz/$f" "${args[@]}" "${folders[@]}") \
    >"$findings/log.txt" 2>&1 || status=1
  [ $status -eq 0 ] || tail -n 60 "$findings/log.txt" >>"$summary"
  { grep -E '^stat::number_of_executed_units|^fuzz inputs:' "$findings/log.txt" | tr '\n' ' ' || true
    echo "($((SECONDS - start)) s)"; } >>"$summary"
  return $status
}

# The fuzzers run side by side, as many at a time as there are jobs: each is one process on one
# core, and none reads another's folders, so what each runs does not depend on the others. Their
# reports follow in name order.
declare -A pid_of=()
running=0
for f in $fuzzers; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_fuzzer "$f" &
  pid_of[$f]=$!
  running=$((running + 1))
done
failed=()
for f in $fuzzers; do
  wait "${pid_of[$f]}" || failed+=("$f")
  cat "$build/fuzz-findings/$f/summary.txt"
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FINDINGS in ${failed[*]} (inputs in $build/fuzz-findings/)" >&2
  exit 1
fi
echo "fuzz: no findings"
