#!/usr/bin/env bash
# The student's loop, as exercises/README.md tells it: make exercise-start, then make exercise
# after each edit. Passes when a correct file's check prints fewer than 40 lines, a file that does
# not compile shows the compiler's error and what to do, and an unknown exercise is refused before
# anything is built. The seconds of the second check (a rebuild of the student's file alone) are
# printed, not held to a bound: timings are the benchmarks' business.
# usage: exercise_loop.sh SOURCE_DIR PRESET
set -uo pipefail
source=$1 preset=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "FAILED  $1"; status=1; }
loop() { make --no-print-directory -C "$source" "$@" PRESET="$preset" 2>&1; }

loop exercise-start NAME=01_tanh DIR="$work" > "$work/start.log" || fail "exercise-start"
cp "$source/exercises/01_tanh/solution.cpp" "$work/01_tanh.cpp"
loop exercise NAME=01_tanh DIR="$work" > "$work/first.log" || fail "the first check of a correct file"
touch "$work/01_tanh.cpp"  # an edit
start=$(date +%s%N)
loop exercise NAME=01_tanh DIR="$work" > "$work/second.log"
code=$?
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
seconds="$((elapsed / 1000)).$(printf %03d $((elapsed % 1000)))"
lines=$(wc -l < "$work/second.log")
cat "$work/second.log"
echo "second check: $lines lines in $seconds s"
[ $code -eq 0 ] || fail "the second check of a correct file exits 0"
[ "$lines" -lt 40 ] || fail "a passing check prints fewer than 40 lines ($lines)"
grep -q "Entering directory\|Built target" "$work/second.log" && fail "no build log on success"

printf 'Tensor Tanh::forward(Context& ctx, const Tensor& x) { return x +; }\n' >> "$work/01_tanh.cpp"
loop exercise NAME=01_tanh DIR="$work" > "$work/broken.log" && fail "a file that does not compile fails"
cat "$work/broken.log" | head -20
grep -q "error" "$work/broken.log" || fail "the compiler's error is shown"
grep -q "does not compile: fix the first error above" "$work/broken.log" || fail "and what to do"

loop exercise NAME=01_tahn DIR="$work" > "$work/typo.log" && fail "an unknown exercise is refused"
grep -q "no exercise '01_tahn' (there are: 01_tanh" "$work/typo.log" || fail "with the list"
[ $status -eq 0 ] && echo "all checks passed"
exit $status
