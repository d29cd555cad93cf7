#!/usr/bin/env bash
# W1, W2 and W4, ours and PyTorch's, side by side in one run; PyTorch at 1 and 2 threads (its
# fastest is the one compared). Then the peak memory (max RSS) of a W1-only process of each.
# Prints Markdown tables of the ratios.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../build/bench/benchmarks/models_benchmark}"
ours=$("$bin" 2)
t1=$(/usr/bin/python3 "$here/models_benchmark.py" 1)
t2=$(/usr/bin/python3 "$here/models_benchmark.py" 2)
get() { echo "$1" | grep "^$2" | sed 's/.*: //'; }
echo "| workload | anatomy (2 threads) ms | PyTorch 1 thread ms | PyTorch 2 threads ms | PyTorch best / anatomy |"
echo "|---|---|---|---|---|"
for w in W1 W2 W4; do
  a=$(get "$ours" "$w"); p1=$(get "$t1" "$w"); p2=$(get "$t2" "$w")
  ratio=$(python3 -c "print(f'{min($p1, $p2) / $a:.2f}x')")
  name=$(echo "$ours" | grep "^$w" | sed 's/ (ms).*//')
  echo "| $name | $a | $p1 | $p2 | $ratio |"
done
# Peak resident memory in MiB of a process that runs W1 alone (GNU time's %M is in KiB).
rss() {
  local f
  f=$(mktemp)
  /usr/bin/time -f %M -o "$f" "$@" > /dev/null
  python3 -c "print(f'{int(open(\"$f\").read().split()[-1]) / 1024:.0f}')"
  rm -f "$f"
}
r_ours=$(rss "$bin" 2 W1)
r_torch=$(rss /usr/bin/python3 "$here/models_benchmark.py" 2 W1)
echo
echo "| W1 peak memory (max RSS) | anatomy MiB | PyTorch MiB | anatomy / PyTorch |"
echo "|---|---|---|---|"
echo "| W1 training, 23 steps | $r_ours | $r_torch | $(python3 -c "print(f'{$r_ours / $r_torch:.2f}')") |"
