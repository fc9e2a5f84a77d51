#!/usr/bin/env bash
# The README's test command: installs what is missing, builds everything, runs every test with CTest,
# then builds the fuzzers (build-fuzz/, clang) and runs each over the same inputs every time
# (scripts/fuzz.sh --ci). GPU tests skip with a printed reason on a machine without a GPU.
# At the end it prints each phase's time and the slowest tests, and warns (never fails) about a
# test that ran past its budget (tests/test-budgets.txt; docs/testing.md says what to do then).
# UNITY_SKIP_FUZZ=1 leaves the fuzzers out.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${UNITY_BUILD_DIR:-$root/build}

phases=()
phase_start=$SECONDS
# Ends the phase that is running: its name and seconds join the summary.
end_phase() {
  phases+=("$1 $((SECONDS - phase_start)) s")
  phase_start=$SECONDS
}
summary() {
  local rc=$?
  [ ${#phases[@]} -gt 0 ] || return 0
  echo "test.sh: phases: $(IFS=,; echo "${phases[*]}" | sed 's/,/, /g'); total ${SECONDS} s"
  if [ -f "$build/ctest-junit.xml" ]; then
    python3 "$root/scripts/test_times.py" "$build/ctest-junit.xml" "$root/tests/test-budgets.txt" || true
  fi
  return $rc
}
trap summary EXIT

bash "$root/scripts/install-deps.sh"
end_phase install
bash "$root/scripts/build.sh" "$@"
end_phase build
export QT_QPA_PLATFORM=offscreen
cd "$build"
rm -f ctest-junit.xml
ctest --output-on-failure -j "${UNITY_JOBS:-$(nproc)}" --timeout 900 --output-junit ctest-junit.xml
end_phase ctest
if [ "${UNITY_SKIP_FUZZ:-0}" != 1 ]; then
  bash "$root/scripts/fuzz.sh" --ci
  end_phase fuzz
fi
