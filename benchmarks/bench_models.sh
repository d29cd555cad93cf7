#!/usr/bin/env bash
# W1, W2 and W4, ours and PyTorch's, side by side in one run, three times; PyTorch at 1 and 2
# threads (its fastest is the one compared). Then the peak memory (max RSS) of a W1-only process
# of each. Prints Markdown tables of the ratios.
# PyTorch's thread count is torch.set_num_threads: Debian's PyTorch runs its matrix products on
# OpenBLAS, whose own threads take every core whatever that says (its "1 thread" W2 used 1.9
# cores; with OPENBLAS_NUM_THREADS=1 as well it took 357 ms against 218). So the column names
# the setting, not the cores used.
set -euo pipefail
shopt -s inherit_errexit # a failure inside $(...) fails its assignment, which stops the script
here="$(cd "$(dirname "$0")" && pwd)"
# OpenBLAS's kernels for this CPU in every PyTorch run, asked once (see openblas_core.py).
core=$(/usr/bin/python3 "$here/openblas_core.py")
if [ -n "$core" ]; then export OPENBLAS_CORETYPE="$core"; fi
bin="${1:-$here/../build/bench/benchmarks/models_benchmark}"
# Three rounds of ours, PyTorch at 1 thread and PyTorch at 2, one after the other, so that all
# three see the same stretches of a noisy machine; the table gives each one's median over the
# rounds (one round each swung W1's ratio from 2.45x to 3.48x within an hour).
all=()
for _ in 1 2 3; do
  ours=$("$bin" 2)
  torch_one=$(/usr/bin/python3 "$here/models_benchmark.py" 1)
  torch_two=$(/usr/bin/python3 "$here/models_benchmark.py" 2)
  all+=("$ours" "$torch_one" "$torch_two")
done
# median WORKLOAD FIRST: the median of the workload's times in all[FIRST], all[FIRST + 3], ...
median() {
  local w=$1 i v vals=()
  for ((i = $2; i < ${#all[@]}; i += 3)); do
    v=$(echo "${all[$i]}" | grep "^$w" | sed 's/.*: //')
    vals+=("$v")
  done
  python3 -c "import statistics, sys; print(f'{statistics.median(map(float, sys.argv[1:])):.2f}')" \
    "${vals[@]}"
}
echo "| workload (median of 3 rounds) | anatomy (2 threads) ms | PyTorch set_num_threads(1) ms | PyTorch set_num_threads(2) ms | PyTorch best / anatomy |"
echo "|---|---|---|---|---|"
for w in W1 W2 W4; do
  a=$(median "$w" 0); p1=$(median "$w" 1); p2=$(median "$w" 2)
  ratio=$(python3 -c "print(f'{min($p1, $p2) / $a:.2f}x')")
  name=$(echo "${all[0]}" | grep "^$w" | sed 's/ (ms).*//')
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
