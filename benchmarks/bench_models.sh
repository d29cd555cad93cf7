#!/usr/bin/env bash
# W1, W2 and W4, ours and PyTorch's, side by side in one run, three times. PyTorch runs in four
# settings: eager and through torch.compile, each at 1 and 2 threads (torch.set_num_threads); the
# fastest of the four is the one compared. Each workload's GFLOP/s (its flops as PyTorch's
# FlopCounterMode counts them, divided by the time) is given as a share of the machine's FMA
# peak at 2 threads (peak_benchmark). Then the peak memory (max RSS) of a W1-only process of each.
# Prints Markdown tables.
#
#     benchmarks/bench_models.sh [MODELS_BENCHMARK]
# PyTorch is the test environment's (build/venv, cmake/test-venv.sh), or ANATOMY_TORCH_PYTHON's.
set -euo pipefail
shopt -s inherit_errexit # a failure inside $(...) fails its assignment, which stops the script
here="$(cd "$(dirname "$0")" && pwd)"
py="${ANATOMY_TORCH_PYTHON:-$here/../build/venv/bin/python}"
# models_benchmark.py imports the model from its one PyTorch definition.
export PYTHONPATH="$here/../export/pytorch${PYTHONPATH:+:$PYTHONPATH}"
if [ ! -x "$py" ]; then
  echo "bench_models: no PyTorch at $py: cmake/test-venv.sh makes it (make bench runs it)" >&2
  exit 1
fi
bin="${1:-$here/../build/bench/benchmarks/models_benchmark}"
peak=$("$(dirname "$bin")/peak_benchmark" --plain | awk '$1 == 2 {print $2}')
flops=$("$py" "$here/models_benchmark.py" 1 --flops 2> /dev/null)

# The settings of PyTorch, in the order of the table's columns.
settings=("1" "2" "1 --compile" "2 --compile")
# Three rounds of ours and the four settings, one after the other, so that all of them see the
# same stretches of a noisy machine; the table gives each one's median over the rounds.
all=()
for _ in 1 2 3; do
  all+=("$("$bin" 2)")
  for s in "${settings[@]}"; do
    # shellcheck disable=SC2086  # a setting is its arguments
    all+=("$("$py" "$here/models_benchmark.py" $s 2> /dev/null)")
  done
done
columns=$((1 + ${#settings[@]}))

# median WORKLOAD COLUMN: the median of the workload's times in that column over the rounds,
# or "failed" where torch.compile could not compile it.
median() {
  local w=$1 i v vals=()
  for ((i = $2; i < ${#all[@]}; i += columns)); do
    if echo "${all[$i]}" | grep -q "^$w compile failed"; then
      echo "failed"
      return
    fi
    v=$(echo "${all[$i]}" | grep "^$w" | sed 's/.*: //')
    vals+=("$v")
  done
  python3 -c "import statistics, sys; print(f'{statistics.median(map(float, sys.argv[1:])):.2f}')" \
    "${vals[@]}"
}
echo "| workload (median of 3 rounds) | anatomy (2 threads) ms | PyTorch eager, 1 thread ms | eager, 2 threads ms | compiled, 1 thread ms | compiled, 2 threads ms | PyTorch best / anatomy | GFLOP/s and share of the 2-thread FMA peak ($peak GFLOP/s): anatomy, PyTorch best |"
echo "|---|---|---|---|---|---|---|---|"
for w in W1 W2 W4; do
  cells=()
  for ((c = 0; c < columns; c++)); do cells+=("$(median "$w" "$c")"); done
  n=$(echo "$flops" | grep "^$w" | sed 's/.*: //')
  name=$(echo "${all[0]}" | grep "^$w" | sed 's/ (ms).*//')
  python3 - "$name" "$n" "$peak" "${cells[@]}" << 'EOF'
import sys
name, flops, peak = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
ours, *torch = sys.argv[4:]
times = [float(t) for t in torch if t != "failed"]
best = min(times)
gflops = lambda ms: flops / (float(ms) * 1e6)
share = lambda ms: f"{gflops(ms):.1f} ({100 * gflops(ms) / peak:.0f}%)"
print(f"| {name} | {ours} | {' | '.join(torch)} | {best / float(ours):.2f}x "
      f"| {share(ours)}, {share(best)} |")
EOF
done
if printf '%s\n' "${all[@]}" | grep -q "compile failed"; then
  echo
  echo "torch.compile failed on:"
  printf '%s\n' "${all[@]}" | grep "compile failed" | sort -u | sed 's/^/- /'
fi
# Peak resident memory in MiB of a process that runs W1 alone (GNU time's %M is in KiB); PyTorch
# eager at 2 threads.
rss() {
  local f
  f=$(mktemp)
  /usr/bin/time -f %M -o "$f" "$@" > /dev/null 2>&1
  python3 -c "print(f'{int(open(\"$f\").read().split()[-1]) / 1024:.0f}')"
  rm -f "$f"
}
r_ours=$(rss "$bin" 2 W1)
r_torch=$(rss "$py" "$here/models_benchmark.py" 2 W1)
echo
echo "| W1 peak memory (max RSS) | anatomy MiB | PyTorch eager MiB | anatomy / PyTorch |"
echo "|---|---|---|---|"
echo "| W1 training, 23 steps | $r_ours | $r_torch | $(python3 -c "print(f'{$r_ours / $r_torch:.2f}')") |"
