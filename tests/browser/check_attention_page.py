#!/usr/bin/env python3
"""Opens an attention page (anatomy attention, tutorial 03) in headless Chromium and checks what a
student would do with it: no console error, each view draws, the selectors and head squares
change the drawing, hovering a token isolates its lines and leaving restores them, the sentence
filter keeps one sentence on each side, the neuron view's softmax of q . k / sqrt(d) is the
model's own weight, and screenshots are not blank.

usage: check_attention_page.py PAGE [--pair] [--trained | --untrained]
       [--screenshots DIR [--shot LAYER HEAD]]
"""
import argparse
import json
import os
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chromium  # noqa: E402

failures = []


def check(ok, what):
    print(("ok      " if ok else "FAILED  ") + what)
    if not ok:
        failures.append(what)


def lines(b):
    """The head view's lines as (head, query, key, opacity)."""
    return b.js("[...document.querySelectorAll('#view line')].map(l => [+l.dataset.head, "
                "+l.dataset.query, +l.dataset.key, +l.getAttribute('stroke-opacity')])")


def select(b, sel, value):
    b.js(f"(() => {{ const s = document.getElementById('{sel}'); s.value = '{value}'; "
         "s.dispatchEvent(new Event('change')); })()")


def not_blank(png, what):
    width, height, channels, rows = chromium.png_pixels(png)
    inked = chromium.dark_pixels(channels, rows)
    check(inked > 0.01 * width * height, f"{what}: the screenshot is not blank "
          f"({inked} of {width * height} pixels inked)")


def png_reader():
    """The screenshot checks read PNGs with chromium.png_pixels: a small image written here with
    every row filter (bytes near 255 make each sum wrap) must read back as written, and its dark
    pixels must be counted as a pixel-by-pixel count has them."""
    width, height, channels = 7, 10, 3
    rows = [bytes((x * 37 + y * 91 + (200 if (x + y) % 3 else 0)) % 256
                  for x in range(width * channels)) for y in range(height)]
    stream, previous = b"", bytes(width * channels)
    for y, row in enumerate(rows):
        kind, line = y % 5, bytearray()
        for i, v in enumerate(row):
            a = row[i - channels] if i >= channels else 0
            b, c = previous[i], previous[i - channels] if i >= channels else 0
            p = a + b - c
            paeth = min((abs(p - a), 0, a), (abs(p - b), 1, b), (abs(p - c), 2, c))[2]
            line.append((v - (0, a, b, (a + b) // 2, paeth)[kind]) % 256)
        stream += bytes([kind]) + bytes(line)
        previous = row

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
           chunk(b"IDAT", zlib.compress(stream)) + chunk(b"IEND", b""))
    check(chromium.png_pixels(png) == (width, height, channels, rows),
          "the PNG reader reads every row filter back as written")
    dark = sum(1 for row in rows for x in range(0, width * channels, channels)
               if min(row[x:x + 3]) < 200)
    check(chromium.dark_pixels(channels, rows) == dark > 0,
          f"the PNG reader counts the dark pixels ({dark})")


def redrawn_at(b, width):
    """Resizes the window and waits for the page's redraw (it comes 100 ms after the resize
    event): until the drawing's width changes, frame by frame, at most 20 s. A redraw still
    pending when the next checks run would reset what they hover. The drawing's new width."""
    before = b.js("+document.getElementById('view').getAttribute('width')")
    b.resize(width, 900)
    return b.js("new Promise(done => { const start = performance.now(); (function poll() {"
                " const w = +document.getElementById('view').getAttribute('width');"
                f" if (w !== {before} || performance.now() - start > 20000) done(w);"
                " else requestAnimationFrame(poll); })(); })")


def fits(b, what):
    """The head view's drawing is as tall as its longer column, queries or keys: the lowest token
    has at least half a row below it and at most one and a half."""
    ys, height = b.js("(() => { const v = document.getElementById('view'); return ["
                      "[...v.querySelectorAll('text.token')].map(t => +t.getAttribute('y')),"
                      " +v.getAttribute('height')]; })()")
    if len(set(ys)) < 2:  # one token a side: no row spacing to measure
        check(max(ys) < height, f"{what}: the drawing holds its token")
        return
    row = sorted(set(ys))[1] - sorted(set(ys))[0]
    check(max(ys) + row / 2 <= height <= max(ys) + 1.5 * row,
          f"{what}: the drawing fits its tokens (the lowest at {max(ys)}, rows {row} apart, "
          f"the drawing {height} high)")


def head_view(b, data, pair, shots, shot=(0, 0)):
    section = data["sections"][0]
    layers, heads = len(section["layers"]), len(section["layers"][0])
    first = lines(b)
    check(len(first) > 0 and {h for h, _, _, _ in first} == {0},
          f"the head view opens on head 0 alone ({len(first)} lines)")
    if heads > 1:
        check(b.js("document.getElementById('all-heads').textContent") == "Show all heads",
              "a button offers every head")
        b.mouse("click", *b.centre("#all-heads"))
    everything = lines(b)
    check({h for h, _, _, _ in everything} == set(range(heads)), "the button shows every head")
    for number, sec in enumerate(data["sections"]):
        select(b, "section", number)
        labels = b.js("[...document.querySelectorAll('#view text.token.left')].map(t => t.textContent)")
        keys = b.js("[...document.querySelectorAll('#view text.token.right')].map(t => t.textContent)")
        wanted = [t + ("  \u2192 " + p if sec["predicts"] else "")
                  for t, p in zip(sec["left"], sec["predicts"] or sec["left"])]
        check(labels == wanted and keys == sec["right"],
              f"'{sec['name']}': the columns show the queries" +
              (" with the token each predicts" if sec["predicts"] else "") + " and the keys")
        fits(b, f"'{sec['name']}'")
    # A section with fewer layers than the layer shown opens on its own last layer.
    counts = [len(sec["layers"]) for sec in data["sections"]]
    if len(set(counts)) > 1:
        more, fewer = counts.index(max(counts)), counts.index(min(counts))
        select(b, "section", more)
        select(b, "layer", max(counts) - 1)
        select(b, "section", fewer)
        shown = b.js("document.getElementById('layer').selectedIndex")
        check(shown == min(counts) - 1 and len(lines(b)) > 0,
              f"from layer {max(counts) - 1} of '{data['sections'][more]['name']}', "
              f"'{data['sections'][fewer]['name']}' ({min(counts)} layers) shows its layer {shown}")
    select(b, "section", 0)
    if heads > 1:  # a section change opens on head 0 again
        b.mouse("click", *b.centre("#all-heads"))
    everything = lines(b)
    # The drawing uses the window's width.
    narrow = redrawn_at(b, 800)
    wide = redrawn_at(b, 1200)
    check(narrow < wide and wide > 1000, f"the drawing follows the window's width ({narrow} -> {wide})")
    if layers > 1:
        select(b, "layer", layers - 1)
        other = lines(b)
        check(other != everything, "another layer draws other lines")
        select(b, "layer", 0)
        check(lines(b) == everything, "back to layer 0 draws the same lines again")
    # Head squares: a click hides a head, a double-click keeps only that head.
    x, y = b.centre("#heads .square[data-head='0']")
    b.mouse("click", x, y)
    without = lines(b)
    check(without and all(h != 0 for h, _, _, _ in without) and len(without) < len(everything),
          "clicking head 0's square hides its lines")
    b.mouse("click", x, y)
    check(lines(b) == everything, "clicking it again shows them again")
    last = heads - 1
    x, y = b.centre(f"#heads .square[data-head='{last}']")
    b.mouse("double", x, y)
    alone = lines(b)
    check(alone and all(h == last for h, _, _, _ in alone), f"double-clicking head {last} shows it alone")
    for h in range(heads - 1):  # a click on each other square brings every head back
        b.mouse("click", *b.centre(f"#heads .square[data-head='{h}']"))
    check(lines(b) == everything, "clicking the other squares shows every head again")
    # Hover: a query token isolates its lines; moving away restores every line.
    everything = lines(b)
    token = 2
    x, y = b.centre(f"#view text.token.left[data-index='{token}']")
    b.mouse("move", x, y)
    focused = lines(b)
    check(focused and all(q == token for _, q, _, _ in focused) and len(focused) < len(everything),
          f"hovering query token {token} shows only its lines ({len(focused)} of {len(everything)})")
    check(b.js(f"document.querySelector(\"#view text.token.left[data-index='{token}']\")"
               ".classList.contains('focus')"), "the hovered token is highlighted")
    b.mouse("move", 5, 5)
    check(lines(b) == everything, "leaving the token restores every line")
    # The key with the most lines into it (a trained head may leave some keys without any).
    key = max(range(len(section["right"])),
              key=lambda k: sum(1 for line in everything if line[2] == k))
    x, y = b.centre(f"#view text.token.right[data-index='{key}']")
    b.mouse("move", x, y)
    into = lines(b)
    check(into and all(k == key for _, _, k, _ in into),
          f"hovering key token {key} shows the lines into it")
    b.mouse("move", 5, 5)
    check(lines(b) == everything, "and leaving it restores them")
    if shots:
        # One head of one layer, as the page opens it, with query token 2 hovered.
        select(b, "layer", shot[0])
        b.mouse("double", *b.centre(f"#heads .square[data-head='{shot[1]}']"))
        b.mouse("move", *b.centre("#view text.token.left[data-index='2']"))
        open(os.path.join(shots, "head_view.png"), "wb").write(b.screenshot())
        b.mouse("move", 5, 5)
        select(b, "layer", 0)
        b.mouse("click", *b.centre("#all-heads"))
    not_blank(b.screenshot(fast=True), "head view")
    if pair:
        start = section["sentence_b_start"]
        check(start > 0, f"the page knows where sentence B starts ({start})")
        check(b.js("getComputedStyle(document.getElementById('filter-box')).display") != "none",
              "the sentence filter is shown for a pair")
        for value, rows, cols in (("ab", (0, start), (start, len(section["right"]))),
                                  ("ba", (start, len(section["left"])), (0, start))):
            select(b, "filter", value)
            left = b.js("[...document.querySelectorAll('#view text.token.left')].map(t => +t.dataset.index)")
            right = b.js("[...document.querySelectorAll('#view text.token.right')].map(t => +t.dataset.index)")
            drawn = lines(b)
            check(left == list(range(*rows)) and right == list(range(*cols)) and drawn and
                  all(rows[0] <= q < rows[1] and cols[0] <= k < cols[1] for _, q, k, _ in drawn),
                  f"filter {value}: queries {rows}, keys {cols} only")
            fits(b, f"filter {value}")
        select(b, "filter", "all")
        check(lines(b) == everything, "filter All draws everything again")
    else:
        check(b.js("getComputedStyle(document.getElementById('filter-box')).display") == "none",
              "no sentence filter for one input")


def model_view(b, data, shots):
    b.mouse("click", *b.centre("#tab-model"))
    for number, section in enumerate(data["sections"]):
        select(b, "section", number)
        layers, heads = len(section["layers"]), len(section["layers"][0])
        thumbs = b.js("document.querySelectorAll('#model svg.thumb').length")
        check(thumbs == layers * heads, f"model view of '{section['name']}': {thumbs} thumbnails "
              f"for {layers} layers x {heads} heads")
        drawn = b.js("[...document.querySelectorAll('#model svg.thumb')].every(s => "
                     "s.querySelectorAll('line').length > 0)")
        check(drawn, "every thumbnail has lines")
    select(b, "section", 0)
    layers, heads = len(data["sections"][0]["layers"]), len(data["sections"][0]["layers"][0])
    layer, head = layers - 1, heads - 1
    b.mouse("click", *b.centre(f"#model svg.thumb[data-layer='{layer}'][data-head='{head}']"))
    check(b.js("getComputedStyle(document.getElementById('zoom')).display") == "block",
          "clicking a thumbnail enlarges it")
    title = b.js("document.querySelector('#zoom h3').textContent")
    check(title.endswith(f"layer {layer}, head {head}"), f"the enlarged picture is named: {title}")
    zoomed = b.js("[...document.querySelectorAll('#zoomed line')].map(l => +l.dataset.head)")
    check(zoomed and set(zoomed) == {head}, "it draws that head only")
    if shots:
        open(os.path.join(shots, "model_view_zoom.png"), "wb").write(b.screenshot())
    b.mouse("click", *b.centre("#close"))
    check(b.js("getComputedStyle(document.getElementById('zoom')).display") == "none",
          "close hides it")
    if shots:
        open(os.path.join(shots, "model_view.png"), "wb").write(b.screenshot())
    not_blank(b.screenshot(fast=True), "model view")


def neuron_view(b, data, shots, shot=(0, 0)):
    b.mouse("click", *b.centre("#tab-neuron"))
    first = data["sections"][0]
    if "queries" in first:  # it opens on layer 0, head 0, query 0
        on = b.js("[...document.querySelectorAll('#heads .square.on')].map(q => +q.dataset.head)")
        soft = b.js("[...document.querySelectorAll('table.neuron td.softmax .value')]"
                    ".map(v => +v.textContent)")
        weights = first["layers"][0][0][0][:len(soft)]
        check(on == [0] and soft and max(abs(a - w) for a, w in zip(soft, weights)) < 0.01,
              f"the neuron view opens on head 0's weights of query 0 (heads shown: {on})")
    for number, section in enumerate(data["sections"]):
        select(b, "section", number)
        if "queries" not in section:
            check(b.js("document.getElementById('neuron').textContent").startswith("This section has no"),
                  f"'{section['name']}' without vectors says so")
            continue
        heads = len(section["layers"][0])
        for layer in range(len(section["layers"])):
            select(b, "layer", layer)
            for head in sorted({0, heads - 1}):
                # In the window before the click (the tokens below may have scrolled it away).
                square = f"#heads .square[data-head='{head}']"
                b.js(f"document.querySelector({json.dumps(square)}).scrollIntoView({{block: 'center'}})")
                b.mouse("click", *b.centre(square))
                if not b.js(f"document.querySelector({json.dumps(square)}).classList.contains('on')"):
                    check(False, f"'{section['name']}' layer {layer}: a click selects head {head}")
                    continue
                for query in sorted({0, len(section["left"]) - 1}):
                    token = f"#neuron div.token[data-index='{query}']"
                    # Scrolled into the window first (a pointer outside it reaches nothing), with
                    # the pointer parked on the title, so that it enters the token from outside.
                    b.mouse("move", 5, 5)
                    b.js(f"document.querySelector({json.dumps(token)}).scrollIntoView({{block: 'center'}})")
                    b.mouse("move", *b.centre(token))
                    check(b.js(f"document.querySelector({json.dumps(token)}).classList.contains('focus')"),
                          f"'{section['name']}': hovering query {query} in the neuron view selects it")
                    rows = b.js("document.querySelectorAll('table.neuron tr[data-key]').length")
                    keys = query + 1 if section["causal"] else len(section["right"])
                    soft = b.js("[...document.querySelectorAll('table.neuron td.softmax .value')]"
                                ".map(v => +v.textContent)")
                    weights = section["layers"][layer][head][query][:keys]
                    worst = max(abs(s - w) for s, w in zip(soft, weights)) if soft else 1
                    check(rows == keys and abs(sum(soft) - 1) < 0.01 and worst < 0.01,
                          f"'{section['name']}' layer {layer} head {head} query {query}: {rows} keys, "
                          f"softmax(q.k/sqrt d) matches the model's weights (worst {worst:.4f})")
        shading(b, section["name"])
        cells = b.js("document.querySelectorAll('table.neuron tr[data-key] td:nth-child(3) .cell').length")
        d = len(section["queries"][0][0][0])
        check(cells == d * b.js("document.querySelectorAll('table.neuron tr[data-key]').length"),
              f"each key vector shows its {d} dimensions")
    select(b, "section", 0)
    if shots:
        select(b, "layer", shot[0])
        b.mouse("click", *b.centre(f"#heads .square[data-head='{shot[1]}']"))
        b.mouse("move", *b.centre("#neuron div.token[data-index='2']"))
        open(os.path.join(shots, "neuron_view.png"), "wb").write(b.screenshot())
    not_blank(b.screenshot(fast=True), "neuron view")


def shading(b, name):
    """The neuron view's cells are as strong as their value against the largest of their kind:
    the q and k vectors share one scale, the products q x k another."""
    groups = b.js("""(() => {
      const rows = [...document.querySelectorAll('table.neuron tr[data-key]')];
      const column = n => rows.flatMap(r => [...r.querySelectorAll(`td:nth-child(${n}) .cell`)]);
      const read = c => {
        const rgba = getComputedStyle(c).backgroundColor.match(/[\\d.]+/g).map(Number);
        return [Math.abs(+c.title), rgba.length > 3 ? rgba[3] : 1];
      };
      return [[...column(2), ...column(3)].map(read), column(4).map(read)];
    })()""")
    for kind, group in zip(("q and k", "q x k"), groups):
        largest = max(v for v, _ in group) or 1.0  # all zero: the page divides by 1 as well
        # The titles hold 3 decimals; the colour's alpha is kept to about 1/255.
        tolerance = 0.01 + 0.0005 / largest
        worst = max(abs(alpha - min(1, v / largest)) for v, alpha in group)
        check(worst < tolerance, f"'{name}': the {kind} cells are shaded by their value over the "
              f"largest, {largest:.3f} (worst {worst:.3f})")


def concentration(data):
    """The share of (layer, head, query) rows of the first section in which one key takes at
    least half the weight: trained heads concentrate, random ones spread evenly."""
    rows = [row for layer in data["sections"][0]["layers"] for head in layer for row in head]
    return sum(1 for row in rows if max(row) >= 0.5) / len(rows)


def weights(b, data, trained):
    share = concentration(data)
    note = b.js("(document.getElementById('page-note') || {}).textContent || ''")
    if trained:
        check(share > 0.5, f"trained weights: for most queries one key takes at least half the "
              f"weight ({share:.0%} of rows)")
        check("untrained" not in note, "no note about untrained weights")
    else:
        check(share < 0.1, f"untrained weights: almost no query gives one key half its weight "
              f"({share:.0%} of rows)")
        check("untrained" in note and "uniform" in note,
              "the page says its weights are untrained and why they look uniform")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("page")
    parser.add_argument("--pair", action="store_true", help="the page shows a sentence pair")
    parser.add_argument("--screenshots", help="save each view's PNG here")
    parser.add_argument("--shot", nargs=2, type=int, default=(0, 0), metavar=("LAYER", "HEAD"),
                        help="the layer and head the head and neuron screenshots show")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--trained", action="store_true",
                      help="pretrained weights: most heads concentrate")
    kind.add_argument("--untrained", action="store_true",
                      help="random weights: the page says why they look uniform")
    a = parser.parse_args()
    png_reader()
    if chromium.find_chromium() is None:
        print("chromium is not installed: cannot check the page in a browser")
        return 77 if os.environ.get("ANATOMY_REQUIRE_BROWSER") != "1" else 1
    if a.screenshots:
        os.makedirs(a.screenshots, exist_ok=True)
    b = chromium.Browser()
    try:
        b.open(a.page)
        data = b.js("JSON.parse(document.getElementById('data').textContent)")
        check(not b.errors, f"the page loads without console errors {b.errors}")
        if a.trained or a.untrained:
            weights(b, data, a.trained)
        head_view(b, data, a.pair, a.screenshots, a.shot)
        b.open(a.page)
        model_view(b, data, a.screenshots)
        b.open(a.page)
        neuron_view(b, data, a.screenshots, a.shot)
        check(not b.errors, f"no console errors while using it {b.errors}")
    finally:
        b.close()
    print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
