#!/usr/bin/env bash
# make test-stress: the whole suite RUNS times in a row while one busy loop per core keeps the
# machine loaded, as on a laptop with a browser open or a CI host shared with another job. A test
# that depends on how fast the machine is, or that waits a fixed time for something, fails here.
#   tools/stress.sh BUILD_DIR [RUNS]
# Each run's output is in BUILD_DIR/stress/run-K.log; the last line says how many runs passed.
set -uo pipefail
build="$1"
runs="${2:-5}"
logs="$build/stress"
rm -rf "$logs"
mkdir -p "$logs"

# The load: one spinning process per core, at the tests' own priority.
load=()
for _ in $(seq "$(nproc)"); do
  bash -c 'while :; do :; done' &
  load+=($!)
done
stop_load() { kill "${load[@]}" 2> /dev/null; }
trap stop_load EXIT

passed=0
for run in $(seq "$runs"); do
  start=$SECONDS
  if ctest --test-dir "$build" -j2 --output-on-failure > "$logs/run-$run.log" 2>&1; then
    passed=$((passed + 1))
    echo "stress: run $run of $runs passed ($((SECONDS - start)) s)"
  else
    echo "stress: run $run of $runs FAILED ($((SECONDS - start)) s); failed tests:"
    sed -n '/The following tests FAILED/,$p' "$logs/run-$run.log" | sed 's/^/  /'
  fi
done
echo "stress: $passed of $runs runs passed with both cores busy"
[ "$passed" = "$runs" ]
