#!/usr/bin/env bash
# Kills `anatomy export` (--to and --to-hf) and `anatomy average` at the file operations they make
# (every one, or 40 spread over them when there are more) and checks, each time:
# - export: the destination is absent or complete (equal to an export that was not killed);
# - average: best/model.safetensors and run.json are each the one before or the one after;
# - the retry succeeds, ends where an uninterrupted command ends, and leaves nothing behind
#   (no .partial- folder, no .tmp file).
# The kill comes from kill_at_call.so (LD_PRELOAD), at the operation numbered
# ANATOMY_KILL_AT_CALL.
# usage: kill_during_writes.sh ANATOMY KILL_AT_CALL_SO
set -uo pipefail
A=$1
SHIM=$2
# The shim is preloaded with LD_PRELOAD, which is the dynamic loader's of Linux (and of other ELF
# systems); macOS's loader has its own way, which this test does not take.
if [ "$(uname -s)" != Linux ]; then
  echo "not on this platform ($(uname -s)): the shim is loaded with Linux's LD_PRELOAD"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/anatomy_kill.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
bad() {
  echo "FAILED  $*"
  failures=$((failures + 1))
}

# Moments to kill at: all of 1..n, or 40 spread evenly over them.
moments() {
  local n=$1
  if [ "$n" -le 40 ]; then
    seq 1 "$n"
  else
    for i in $(seq 0 39); do echo $((1 + i * (n - 1) / 39)); done | uniq
  fi
}

# How many file operations a command makes when nothing stops it.
count_calls() {
  ANATOMY_COUNT_CALLS_TO="$work/count" LD_PRELOAD="$SHIM" "$@" > /dev/null 2>&1
  cat "$work/count"
}

leftovers() {  # anything a killed writer left beside its destination
  find "$1" -name '*.partial-*' -o -name '*.tmp[0-9]*' | head -5
}

# The runs to work on: a character language model (export) and a translation run that keeps
# checkpoints (average).
for i in $(seq 1 100); do echo "to be or not to be, that is the question."; done > "$work/text.txt"
for i in $(seq 0 199); do
  printf 'w%d x%d\tv%d y%d%s\n' $((i % 7)) $((i % 5)) $((i % 7)) $((i % 5)) "$([ $((i % 2)) = 1 ] && echo ' z')"
done > "$work/corpus.tsv"
"$A" train --threads 1 --task lm --preset tiny --iters 2 --text "$work/text.txt" \
  --out "$work/lm" > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
"$A" train --threads 1 --corpus "$work/corpus.tsv" --average 3 --epochs 4 --vocab-size 40 \
  --preset tiny --limit 1500 --out "$work/mt" > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
# A best that any average beats, so that `average` writes best/ and run.json.
python3 - "$work/mt/run.json" << 'EOF'
import json, sys
run = json.load(open(sys.argv[1]))
run["best"].update({"bleu": -1.0, "valid_loss": 1e9, "exact_match": -1.0})
json.dump(run, open(sys.argv[1], "w"), indent=2)
EOF

for to in --to --to-hf; do
  ref="$work/ref$to"
  "$A" export --checkpoint "$work/lm" $to "$ref" > /dev/null 2>&1 || bad "export $to failed unkilled"
  n=$(count_calls "$A" export --checkpoint "$work/lm" $to "$work/probe$to")
  rm -rf "$work/probe$to"
  tried=0
  for k in $(moments "$n"); do
    dest="$work/out$to"
    ANATOMY_KILL_AT_CALL=$k LD_PRELOAD="$SHIM" "$A" export --checkpoint "$work/lm" $to "$dest" \
      > /dev/null 2>&1
    if [ -e "$dest" ] && ! diff -r "$ref" "$dest" > /dev/null; then
      bad "export $to killed at operation $k of $n: $dest is there but not complete"
    fi
    if [ ! -e "$dest" ]; then
      "$A" export --checkpoint "$work/lm" $to "$dest" > "$work/log" 2>&1 ||
        bad "export $to: the retry after a kill at $k failed: $(cat "$work/log")"
      diff -r "$ref" "$dest" > /dev/null || bad "export $to: the retry after a kill at $k differs"
    fi
    [ -z "$(leftovers "$work")" ] || bad "export $to killed at $k left $(leftovers "$work")"
    rm -rf "$dest"
    tried=$((tried + 1))
  done
  echo "export $to: killed at $tried of its $n file operations"
done

cp -a "$work/mt" "$work/before"
cp -a "$work/mt" "$work/after"
"$A" average --checkpoint "$work/after" > "$work/log" 2>&1 || bad "average failed unkilled"
grep -q "kept" "$work/log" || bad "the unkilled average did not write best/: $(cat "$work/log")"
cmp -s "$work/before/best/model.safetensors" "$work/after/best/model.safetensors" &&
  bad "the average's weights equal the best's: the test would not tell them apart"
cp -a "$work/mt" "$work/probe"
n=$(count_calls "$A" average --checkpoint "$work/probe")
tried=0
for k in $(moments "$n"); do
  cur="$work/cur"
  rm -rf "$cur"
  cp -a "$work/mt" "$cur"
  ANATOMY_KILL_AT_CALL=$k LD_PRELOAD="$SHIM" "$A" average --checkpoint "$cur" > /dev/null 2>&1
  for f in best/model.safetensors run.json; do
    cmp -s "$cur/$f" "$work/before/$f" || cmp -s "$cur/$f" "$work/after/$f" ||
      bad "average killed at operation $k of $n: $f is neither the one before nor the one after"
  done
  "$A" average --checkpoint "$cur" > "$work/log" 2>&1 ||
    bad "average: the retry after a kill at $k failed: $(cat "$work/log")"
  for f in best/model.safetensors run.json; do
    cmp -s "$cur/$f" "$work/after/$f" || bad "average: after a kill at $k and a retry, $f differs"
  done
  [ -z "$(leftovers "$cur")" ] || bad "average killed at $k left $(leftovers "$cur")"
  tried=$((tried + 1))
done
echo "average: killed at $tried of its $n file operations"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "every kill left the destination as it was or complete, and every retry succeeded"
