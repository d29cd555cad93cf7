#!/usr/bin/env bash
# Runs every harness for at least SECONDS and at least RUNS executions (two harnesses at a time,
# one per core), from its committed seeds plus what earlier runs found, and prints one line per
# harness: seconds, executions, corpus size, crashes.
# A crash, a sanitizer report, a raw library error, an input slower than 10 s or a leak stops
# that harness, saves the input under build/sanitize/findings/ and makes this script fail.
#   fuzz/run.sh BUILD_DIR SECONDS [RUNS]
set -uo pipefail
build="$1"
seconds="$2"
runs="${3:-0}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$build/../work"
findings="$build/../findings"
mkdir -p "$work" "$findings"
harnesses="safetensors config tokenizer tsv run_json training_state"

# libFuzzer stops at -max_total_time or -runs, whichever comes first: a first pass runs for the
# time, a second (if needed) makes up the executions.
run_one() {
  local name="$1" start=$SECONDS done=0 rc=0 limit
  mkdir -p "$work/$name"
  : > "$work/$name.log"
  for limit in "-max_total_time=$seconds" "-runs"; do
    if [ "$limit" = -runs ]; then
      [ "$done" -ge "$runs" ] && break
      limit="-runs=$((runs - done))"
    fi
    "$build/${name}_fuzzer" "$work/$name" "$here/corpus/$name" "$limit" \
      -timeout=10 -rss_limit_mb=4096 -max_len=8192 -print_final_stats=1 \
      -artifact_prefix="$findings/$name-" >> "$work/$name.log" 2>&1
    rc=$?
    done=$((done + $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$name.log" |
      tail -1 | grep -o '[0-9]*$' || echo 0)))
    [ "$rc" != 0 ] && break
  done
  echo "$rc $done $((SECONDS - start))" > "$work/$name.result"
}
export -f run_one
export work here seconds runs findings build
printf '%s\n' $harnesses | xargs -P 2 -I{} bash -c 'run_one {}'

status=0
printf '%-16s %8s %12s %10s %8s  %s\n' harness seconds executions exec/s corpus result
for name in $harnesses; do
  read -r rc execs secs < "$work/$name.result"
  corpus=$(find "$work/$name" -type f | wc -l)
  result="0 crashes"
  if [ "$rc" != 0 ]; then
    result="FAILED (exit $rc): see $work/$name.log and $findings/$name-*"
    status=1
  fi
  printf '%-16s %8s %12s %10s %8s  %s\n' "$name" "$secs" "$execs" "$((execs / (secs > 0 ? secs : 1)))" \
    "$corpus" "$result"
done
exit $status
