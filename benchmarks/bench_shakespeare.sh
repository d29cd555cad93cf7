#!/usr/bin/env bash
# Tiny Shakespeare (issue 12): nanoGPT's CPU recipe, 2000 iterations, as a student runs it:
# `anatomy train --task lm` against the same recipe in PyTorch (shakespeare_reference.py), each
# timed as a whole process. Ours, then PyTorch's, then ours again, so that our two runs bracket
# the reference's on a noisy machine; each is compared with it. Prints a Markdown table of the
# wall times, the ratios (target: at most 50%) and both validation losses (the same recipe:
# equal to within seed spread). PyTorch runs the recipe once, in the fastest of its four
# settings (eager or torch.compile, 1 or 2 threads) for the recipe's training step, W4 of
# models_benchmark.py, timed in each setting first.
#
#     benchmarks/bench_shakespeare.sh [BUILD_DIR]
# PyTorch is the test environment's (build/venv, cmake/test-venv.sh), or ANATOMY_TORCH_PYTHON's.
set -euo pipefail
shopt -s inherit_errexit # a failure inside $(...) fails its assignment, which stops the script
here="$(cd "$(dirname "$0")" && pwd)"
py="${ANATOMY_TORCH_PYTHON:-$here/../build/venv/bin/python}"
if [ ! -x "$py" ]; then
  echo "bench_shakespeare: no PyTorch at $py: cmake/test-venv.sh makes it (make bench runs it)" >&2
  exit 1
fi
build="${1:-$here/../build/bench}"
anatomy="$build/cli/anatomy"
text="$here/../../shared/data/tinyshakespeare/input.txt"
if [ ! -f "$text" ]; then
  echo "bench_shakespeare: $text is missing (../shared/data, beside the project); skipped" >&2
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Wall seconds of a command; its output to the log named first. A command that fails stops the
# benchmark with the end of its output: inside $(...) bash does not stop on an error by itself,
# and a failed run would be timed as if it had trained.
seconds() {
  local log=$1 start
  shift
  start=$(date +%s.%N)
  if ! "$@" > "$log" 2>&1; then
    echo "bench_shakespeare: '$*' failed; the end of its output:" >&2
    tail -n 5 "$log" >&2
    exit 1
  fi
  python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')"
}
ours() { seconds "$work/ours$1.log" "$anatomy" train --task lm --text "$text" --out "$work/run$1" \
  --lr 2e-3; }
# PyTorch's fastest setting for the recipe's step.
setting=$(for s in "1" "2" "1 --compile" "2 --compile"; do
  # shellcheck disable=SC2086  # a setting is its arguments
  "$py" "$here/models_benchmark.py" $s W4 2> /dev/null | sed -n "s/^W4 .*(ms): \(.*\)/\1 $s/p"
done | sort -n | head -n 1 | cut -d' ' -f2-)
threads=${setting%% *}
compile=$([ "$setting" != "$threads" ] && echo "--compile" || true)
first=$(ours 1)
# shellcheck disable=SC2086  # $compile is the option or nothing
reference=$(seconds "$work/reference.log" "$py" "$here/shakespeare_reference.py" "$text" \
  --lr 2e-3 --threads "$threads" $compile)
second=$(ours 2)

ours_loss=$(grep -ao 'valid loss [0-9.]*' "$work/ours1.log" | tail -n 1 | awk '{print $3}')
reference_loss=$(grep -ao 'validation loss [0-9.]*' "$work/reference.log" | tail -n 1 |
  awk '{print $3}')
described=$([ -n "$compile" ] && echo "compiled" || echo "eager")
echo "| Tiny Shakespeare, 2000 iterations | anatomy s (a run before PyTorch's, one after) | PyTorch s ($described, $threads thread(s)) | anatomy / PyTorch (target <= 50%) | validation loss, anatomy and PyTorch (target: within 0.02) |"
echo "|---|---|---|---|---|"
python3 - "$first" "$second" "$reference" "$ours_loss" "$reference_loss" << 'EOF'
import sys
first, second, reference = map(float, sys.argv[1:4])
print(f"| wall time, the whole process | {first:.1f}, {second:.1f} | {reference:.1f} "
      f"| {100 * first / reference:.1f}%, {100 * second / reference:.1f}% "
      f"| {sys.argv[4]}, {sys.argv[5]} |")
EOF
