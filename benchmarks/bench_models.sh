#!/usr/bin/env bash
# W1 and W2, ours and PyTorch's, side by side in one run; PyTorch at 1 and 2 threads (its
# fastest is the one compared). Prints a Markdown table of the ratios.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../build/bench/benchmarks/models_benchmark}"
ours=$("$bin" 2)
t1=$(/usr/bin/python3 "$here/models_benchmark.py" 1)
t2=$(/usr/bin/python3 "$here/models_benchmark.py" 2)
get() { echo "$1" | grep "^$2" | sed 's/.*: //'; }
echo "| workload | anatomy (2 threads) ms | PyTorch 1 thread ms | PyTorch 2 threads ms | PyTorch best / anatomy |"
echo "|---|---|---|---|---|"
for w in W1 W2; do
  a=$(get "$ours" "$w"); p1=$(get "$t1" "$w"); p2=$(get "$t2" "$w")
  best=$(python3 -c "print(min($p1, $p2))")
  ratio=$(python3 -c "print(f'{min($p1, $p2) / $a:.2f}x')")
  name=$(echo "$ours" | grep "^$w" | sed 's/ (ms).*//')
  echo "| $name | $a | $p1 | $p2 | $ratio |"
done
