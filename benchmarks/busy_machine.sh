#!/usr/bin/env bash
# No collapse on a busy machine. Two measurements, each three rounds that alternate their cases so
# that all see the same moments of a noisy machine; the tables give the medians.
# 1. The other core busy (one spinning competitor, a student's browser at its worst): W1 with the
#    default thread count, quiet and then beside the competitor. Target: at most 1.5x the quiet
#    time.
# 2. Every core busy (one competitor per core): W1 and tutorial 10 --fast with one thread and
#    with the default thread count. Target: the default at most 1.5x one thread's time.
#   benchmarks/busy_machine.sh [build dir, default build/bench]
set -euo pipefail
shopt -s inherit_errexit # a failure inside $(...) fails its assignment, which stops the script
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../build/bench}"
bench="$build/benchmarks/models_benchmark"
tutorial="$build/tutorials/10_seq2seq_translation"
cores=$(nproc)

pids=()
stop() {
  if ((${#pids[@]})); then kill "${pids[@]}" 2> /dev/null || true; fi
  if ((${#pids[@]})); then wait "${pids[@]}" 2> /dev/null || true; fi
  pids=()
}
trap stop EXIT
# start N: N spinning competitors, each already spinning when this returns (it has written its
# line), so no measurement starts before they do.
start() {
  local fifo
  fifo=$(mktemp -u)
  mkfifo "$fifo"
  exec 3<> "$fifo" # read and write: the opening does not wait, and the lines wait in the pipe
  for _ in $(seq "$1"); do
    (
      echo up >&3
      exec 3>&-
      while :; do :; done
    ) &
    pids+=($!)
  done
  for _ in $(seq "$1"); do read -r _ <&3; done
  exec 3>&-
  rm -f "$fifo"
}

w1() { "$bench" "$1" W1 | sed 's/.*: //'; }
# Wall seconds of one tutorial run (its own output discarded).
tut() {
  local t0 t1
  t0=$(date +%s.%N)
  env "$@" "$tutorial" --fast > /dev/null
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}

other=()
for _ in 1 2 3; do
  quiet=$(w1 "$cores")
  start 1
  busy=$(w1 "$cores")
  stop
  other+=("$quiet $busy")
done

start "$cores"
every=()
for _ in 1 2 3; do
  w1_one=$(w1 1)
  w1_all=$(w1 "$cores")
  tut_one=$(tut OMP_NUM_THREADS=1)
  tut_all=$(tut OMP_NUM_THREADS="$cores")
  every+=("$w1_one $w1_all $tut_one $tut_all")
done
stop

echo "| the other core busy (1 competitor), median of 3 | quiet | busy | busy / quiet (target <= 1.5) |"
echo "|---|---|---|---|"
python3 - "${other[@]}" << 'PY'
import statistics
import sys
quiet, busy = (statistics.median(col) for col in zip(*(map(float, r.split()) for r in sys.argv[1:])))
print(f"| W1 training step, default threads (ms) | {quiet:.1f} | {busy:.1f} | {busy / quiet:.2f}x |")
PY
echo
echo "| every core busy ($cores competitors), median of 3 | 1 thread | $cores threads | ratio (target <= 1.5) |"
echo "|---|---|---|---|"
python3 - "${every[@]}" << 'PY'
import statistics
import sys
rounds = [list(map(float, r.split())) for r in sys.argv[1:]]
w1_one, w1_all, t_one, t_all = (statistics.median(col) for col in zip(*rounds))
print(f"| W1 training step (ms) | {w1_one:.1f} | {w1_all:.1f} | {w1_all / w1_one:.2f}x |")
print(f"| tutorial 10 --fast (s) | {t_one:.1f} | {t_all:.1f} | {t_all / t_one:.2f}x |")
PY
