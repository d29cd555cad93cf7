#!/usr/bin/env bash
# No collapse on a busy machine: one busy competitor process per core (a student's browser and
# editor, at their worst), then W1 and tutorial 10 --fast with one thread and with the default
# thread count, on the same busy machine, three times. Prints a Markdown table of the medians; the
# target is a ratio (default threads / one thread) of at most 1.5.
#   benchmarks/busy_machine.sh [build dir, default build/bench]
set -euo pipefail
shopt -s inherit_errexit # a failure inside $(...) fails its assignment, which stops the script
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../build/bench}"
bench="$build/benchmarks/models_benchmark"
tutorial="$build/tutorials/10_seq2seq_translation"
cores=$(nproc)

pids=()
stop() { if ((${#pids[@]})); then kill "${pids[@]}" 2>/dev/null || true; fi; }
trap stop EXIT
for _ in $(seq "$cores"); do
  (while :; do :; done) &
  pids+=($!)
done
sleep 1

w1() { "$bench" "$1" W1 | sed 's/.*: //'; }
# Wall seconds of one tutorial run (its own output discarded).
tut() {
  local t0 t1
  t0=$(date +%s.%N)
  env "$@" "$tutorial" --fast > /dev/null
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}

# Three rounds, one thread and all threads alternating, so that both see the same moments of a
# noisy machine; the table gives each one's median.
runs=()
for _ in 1 2 3; do
  w1_one=$(w1 1)
  w1_all=$(w1 "$cores")
  tut_one=$(tut OMP_NUM_THREADS=1)
  tut_all=$(tut OMP_NUM_THREADS="$cores")
  runs+=("$w1_one $w1_all $tut_one $tut_all")
done
echo "| busy machine ($cores competitors), median of 3 | 1 thread | $cores threads | ratio (target <= 1.5) |"
echo "|---|---|---|---|"
python3 - "${runs[@]}" << 'EOF'
import statistics
import sys
rounds = [list(map(float, r.split())) for r in sys.argv[1:]]
w1_one, w1_all, t_one, t_all = (statistics.median(col) for col in zip(*rounds))
print(f"| W1 training step (ms) | {w1_one:.1f} | {w1_all:.1f} | {w1_all / w1_one:.2f}x |")
print(f"| tutorial 10 --fast (s) | {t_one:.1f} | {t_all:.1f} | {t_all / t_one:.2f}x |")
EOF
