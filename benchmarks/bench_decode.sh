#!/usr/bin/env bash
# W3 (issue 12): greedy and beam-4 translation of 1000 sentences by one model, `anatomy
# translate` against PyTorch's loop with a KV cache (decode_reference.py), PyTorch at 1 and 2
# threads (its fastest is the one compared). The model is a short run on the Tatoeba corpus
# (the corpus defaults, 2 epochs of its first 12000 pairs: the same model every time),
# exported to PyTorch with `anatomy export`; the sentences are the sources of its held-out
# pairs. Each time is the best of 3. PyTorch's is its decoding loop alone; ours is the
# `anatomy translate` process less the same process translating one sentence (start-up and
# loading; tokenizing is left in). Prints a Markdown table: the times, the ratio, and how many
# translations the two agree on (the same search over the same weights; float rounding can
# break a near tie differently).
#
#     benchmarks/bench_decode.sh [BUILD_DIR]
set -euo pipefail
shopt -s inherit_errexit # a failure inside $(...) fails its assignment, which stops the script
here="$(cd "$(dirname "$0")" && pwd)"
# OpenBLAS's kernels for this CPU in every PyTorch run, asked once (see openblas_core.py).
core=$(/usr/bin/python3 "$here/openblas_core.py")
if [ -n "$core" ]; then export OPENBLAS_CORETYPE="$core"; fi
build="${1:-$here/../build/bench}"
anatomy="$build/cli/anatomy"
data="$here/../../shared/data/tatoeba/eng-deu.tsv"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$anatomy" train --corpus "$data" --out "$work/run" --limit 12000 --epochs 2 > "$work/train.log"
"$anatomy" export --checkpoint "$work/run" --to "$work/export" > /dev/null
cut -f1 "$work/run/split/test.tsv" "$work/run/split/valid.tsv" | sed -n 1,1000p > "$work/src.txt"
n=$(wc -l < "$work/src.txt")
head -n 1 "$work/src.txt" > "$work/one.txt"

# The best wall time of 3 runs of a command, its output to $out; in milliseconds' precision, as
# the ratio is taken from it (rounded to 0.01 s, ours of 0.10 s could have been 0.095 or 0.105).
seconds() {
  local start times=()
  for _ in 1 2 3; do
    start=$(date +%s.%N)
    "$@" > "$out"
    times+=("$(python3 -c "print($(date +%s.%N) - $start)")")
  done
  python3 -c "print(f'{min(${times[0]}, ${times[1]}, ${times[2]}):.3f}')"
}
echo "| W3: $n sentences | anatomy process s | anatomy decoding s (2 threads) | PyTorch 1 thread s | PyTorch 2 threads s | PyTorch best / anatomy | same translations |"
echo "|---|---|---|---|---|---|---|"
# The same search on both sides: a run chooses its own length penalty on validation, which the
# PyTorch loop would not know, so both are given one.
penalty=0.6
for beam in 1 4; do
  out="$work/one$beam.txt"
  one=$(seconds "$anatomy" translate --checkpoint "$work/run" --beam "$beam" \
    --length-penalty "$penalty" --file "$work/one.txt")
  out="$work/ours$beam.txt"
  process=$(seconds "$anatomy" translate --checkpoint "$work/run" --beam "$beam" \
    --length-penalty "$penalty" --file "$work/src.txt")
  ours=$(python3 -c "print(f'{$process - $one:.3f}')")
  torch=()
  for threads in 1 2; do
    best=
    for _ in 1 2 3; do
      t=$(/usr/bin/python3 "$here/decode_reference.py" --export "$work/export" --anatomy "$anatomy" \
        --input "$work/src.txt" --beam "$beam" --length-penalty "$penalty" --threads "$threads" \
        --output "$work/torch$beam.txt" |
        sed -n 's/^decode_seconds: //p')
      best=$(python3 -c "print(min($t, ${best:-$t}))")
    done
    torch+=("$best")
  done
  same=$(paste -d '\t' "$work/ours$beam.txt" "$work/torch$beam.txt" | awk -F '\t' '$1 == $2' | wc -l)
  ratio=$(python3 -c "print(f'{min(${torch[0]}, ${torch[1]}) / $ours:.2f}x')")
  name=$([ "$beam" = 1 ] && echo "greedy" || echo "beam $beam")
  echo "| $name | $process | $ours | ${torch[0]} | ${torch[1]} | $ratio | $same of $n |"
done
