#!/usr/bin/env bash
# Regenerates every picture of README.md and docs/ from the programs as they are, so that no
# picture shows output the code no longer produces:
#   docs/images/numbers_alignment.svg   the encoder-decoder attention of a translation model
#                                       trained as make demo trains it (anatomy attention --svg)
#   docs/images/{head,model,neuron}_view.png
#                                       the three views of `anatomy attention --model-dir` on a
#                                       pretrained BERT (all-MiniLM-L6-v2, which make setup
#                                       puts in the cache, or BERT=DIR) and the book's sentence pair,
#                                       screenshots in headless Chromium; the head and neuron
#                                       views show layer 0, head 2, where each "flies" looks at
#                                       the word before it (tutorial 03 finds that head)
# usage: tools/make_pictures.sh BUILD_DIR   (make pictures)
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$(dirname "$0")/.." && pwd)
images=$source/docs/images
anatomy=$build/cli/anatomy
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== a translation model, trained as make demo trains it (${BUDGET:-150} s)"
"$anatomy" train --task numbers --out "$work/numbers" --time-budget "${BUDGET:-150}" --seed 0 \
  > "$work/train.log"
tail -n 1 "$work/train.log"
"$anatomy" attention --checkpoint "$work/numbers" --out "$work/numbers.html" \
  --svg "$images/numbers_alignment.svg" "four thousand three hundred twenty-one"

echo "== the book's sentence pair on a pretrained BERT: head, model and neuron view"
"$source/cmake/setup-pretrained.sh"
bert=${BERT:-${ANATOMY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/anatomy}/pretrained/all-MiniLM-L6-v2}
"$anatomy" attention --model-dir "$bert" --out "$work/pair.html" \
  --pair "time flies like an arrow" "fruit flies like a banana"
python3 "$source/tests/browser/check_attention_page.py" "$work/pair.html" --pair --trained \
  --screenshots "$work/shots" --shot 0 2 > "$work/browser.log"
for view in head_view model_view neuron_view; do cp "$work/shots/$view.png" "$images/"; done
ls -l "$images"
