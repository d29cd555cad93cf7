#!/usr/bin/env bash
# Tiny Shakespeare (issue 12): nanoGPT's CPU recipe, 2000 iterations, as a student runs it:
# `anatomy train --task lm` against the same recipe in PyTorch (shakespeare_reference.py), each
# timed as a whole process, with seeds 0, 1 and 2 in turns (ours, PyTorch's, ours, ...), so that
# both see the same stretches of a noisy machine. PyTorch runs in the fastest of its four
# settings (eager or torch.compile, 1 or 2 threads) for the recipe's training step, W4 of
# models_benchmark.py, timed in each setting first. Prints a Markdown table: each side's times,
# the median ratio (target: at most 50%), and each side's validation losses with their means
# (target: within 0.02; one run's loss moves by about that much from seed to seed, so the means
# are compared).
#
#     benchmarks/bench_shakespeare.sh [BUILD_DIR]
# PyTorch is the test environment's (build/venv, cmake/test-venv.sh), or ANATOMY_TORCH_PYTHON's.
set -euo pipefail
shopt -s inherit_errexit # a failure inside $(...) fails its assignment, which stops the script
here="$(cd "$(dirname "$0")" && pwd)"
py="${ANATOMY_TORCH_PYTHON:-$here/../build/venv/bin/python}"
# models_benchmark.py imports the model from its one PyTorch definition.
export PYTHONPATH="$here/../export/pytorch${PYTHONPATH:+:$PYTHONPATH}"
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
  --lr 2e-3 --seed "$1"; }
# PyTorch's fastest setting for the recipe's step.
setting=$(for s in "1" "2" "1 --compile" "2 --compile"; do
  # shellcheck disable=SC2086  # a setting is its arguments
  "$py" "$here/models_benchmark.py" $s W4 2> /dev/null | sed -n "s/^W4 .*(ms): \(.*\)/\1 $s/p"
done | sort -n | head -n 1 | cut -d' ' -f2-)
threads=${setting%% *}
compile=$([ "$setting" != "$threads" ] && echo "--compile" || true)
ours_times=() reference_times=() ours_losses=() reference_losses=()
for seed in 0 1 2; do
  # (Plain assignments first: a failure inside $(...) stops the script there.)
  t=$(ours "$seed")
  ours_times+=("$t")
  # shellcheck disable=SC2086  # $compile is the option or nothing
  t=$(seconds "$work/reference$seed.log" "$py" "$here/shakespeare_reference.py" "$text" \
    --lr 2e-3 --seed "$seed" --threads "$threads" $compile)
  reference_times+=("$t")
  t=$(grep -ao 'valid loss [0-9.]*' "$work/ours$seed.log" | tail -n 1 | awk '{print $3}')
  ours_losses+=("$t")
  t=$(grep -ao 'validation loss [0-9.]*' "$work/reference$seed.log" | tail -n 1 | awk '{print $3}')
  reference_losses+=("$t")
done
described=$([ -n "$compile" ] && echo "compiled" || echo "eager")
echo "| Tiny Shakespeare, 2000 iterations, seeds 0, 1, 2 | anatomy s | PyTorch s ($described, $threads thread(s)) | anatomy / PyTorch, median (target <= 50%) | validation loss: anatomy's, PyTorch's | mean loss: anatomy, PyTorch (target: within 0.02) |"
echo "|---|---|---|---|---|---|"
python3 - "${ours_times[*]}" "${reference_times[*]}" "${ours_losses[*]}" "${reference_losses[*]}" << 'EOF'
import statistics
import sys
ours, reference, ours_loss, reference_loss = ([float(v) for v in a.split()] for a in sys.argv[1:5])
ratio = statistics.median(o / r for o, r in zip(ours, reference))
show = lambda values, digits: ", ".join(f"{v:.{digits}f}" for v in values)
print(f"| wall time, the whole process | {show(ours, 1)} | {show(reference, 1)} | {100 * ratio:.1f}% "
      f"| {show(ours_loss, 4)}; {show(reference_loss, 4)} "
      f"| {statistics.mean(ours_loss):.4f}, {statistics.mean(reference_loss):.4f} |")
EOF
