#!/usr/bin/env bash
# Regenerates every picture of README.md and docs/ from the programs as they are, so that no
# picture shows output the code no longer produces:
#   docs/images/numbers_alignment.svg   the encoder-decoder attention of a translation model
#                                       trained as make demo trains it (anatomy attention --svg)
#   docs/images/{head,model,neuron}_view.png
#                                       the three views of `anatomy attention --bert` on the
#                                       book's sentence pair, screenshots in headless Chromium
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

echo "== the book's sentence pair on a BERT folder: head, model and neuron view"
bert=${BERT:-$source/tests/parity/golden/bert}
"$anatomy" attention --bert "$bert" --out "$work/pair.html" \
  "time flies like an arrow" "fruit flies like a banana"
python3 "$source/tests/browser/check_attention_page.py" "$work/pair.html" --pair \
  --screenshots "$work/shots" > "$work/browser.log"
for view in head_view model_view neuron_view; do cp "$work/shots/$view.png" "$images/"; done
ls -l "$images"
