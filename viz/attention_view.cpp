#include "viz/attention_view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "io/safetensors.hpp"
#include "viz/ticks.hpp"
#include "viz/xml.hpp"

namespace anatomy::viz {

namespace {

void check_section(const AttentionSection& s) {
  const auto Tq = static_cast<int64_t>(s.left.size()), Tk = static_cast<int64_t>(s.right.size());
  if (s.layers.empty()) throw Error(fmt::format("attention view: '{}' has no layers", s.name));
  for (size_t l = 0; l < s.layers.size(); ++l) {
    const Tensor& w = s.layers[l];
    if (w.dim() != 3 || w.size(1) != Tq || w.size(2) != Tk || w.size(0) != s.layers[0].size(0))
      throw Error(fmt::format(
          "attention view: '{}' layer {} has weights {} but {} x {} tokens (expected [heads, "
          "{}, {}], the same heads in every layer)",
          s.name, l, w.shape().str(), Tq, Tk, Tq, Tk));
  }
  if (s.sentence_b_start != -1 &&
      (s.sentence_b_start <= 0 || s.sentence_b_start >= Tq || s.left.size() != s.right.size()))
    throw Error(fmt::format(
        "attention view: '{}' has sentence_b_start {} (expected -1, or a position inside its {} "
        "tokens of self-attention)",
        s.name, s.sentence_b_start, Tq));
  if (!s.predicts.empty() && s.predicts.size() != s.left.size())
    throw Error(fmt::format("attention view: '{}' has {} predicted tokens for {} query rows",
                            s.name, s.predicts.size(), Tq));
  if (s.queries.empty() && s.keys.empty()) return;
  if (s.queries.size() != s.layers.size() || s.keys.size() != s.layers.size())
    throw Error(fmt::format("attention view: '{}' has queries/keys for {}/{} of its {} layers",
                            s.name, s.queries.size(), s.keys.size(), s.layers.size()));
  for (size_t l = 0; l < s.layers.size(); ++l) {
    const Tensor &q = s.queries[l], &k = s.keys[l];
    const int64_t H = s.layers[l].size(0);
    if (q.dim() != 3 || k.dim() != 3 || q.size(0) != H || k.size(0) != H || q.size(1) != Tq ||
        k.size(1) != Tk || q.size(2) != k.size(2))
      throw Error(fmt::format(
          "attention view: '{}' layer {} has queries {} and keys {} (expected [{}, {}, D] and "
          "[{}, {}, D])",
          s.name, l, q.shape().str(), k.shape().str(), H, Tq, H, Tk));
  }
}

// [heads, rows, cols] as nested JSON arrays, rounded to 3 decimals (the page shows no more).
nlohmann::json rounded(const Tensor& t) {
  const Tensor c = t.contiguous();
  const auto v = c.to_vector();
  const int64_t H = c.size(0), R = c.size(1), C = c.size(2);
  nlohmann::json heads = nlohmann::json::array();
  for (int64_t h = 0; h < H; ++h) {
    nlohmann::json rows = nlohmann::json::array();
    for (int64_t i = 0; i < R; ++i) {
      std::vector<double> row;
      for (int64_t j = 0; j < C; ++j)
        row.push_back(std::round(v[static_cast<size_t>((h * R + i) * C + j)] * 1000.0) / 1000.0);
      rows.push_back(row);
    }
    heads.push_back(rows);
  }
  return heads;
}

// The page's script: the three views drawn with plain DOM and SVG from the JSON data.
constexpr const char* kScript = R"JS(
const data = JSON.parse(document.getElementById('data').textContent);
const colors = ['#1f77b4','#ff7f0e','#2ca02c','#d62728','#9467bd','#8c564b','#e377c2','#7f7f7f',
                '#bcbd22','#17becf','#393b79','#ad494a','#637939','#8c6d31','#843c39','#7b4173'];
const NS = 'http://www.w3.org/2000/svg';
const $ = id => document.getElementById(id);
const state = {view: 'head', section: 0, layer: 0, heads: new Set(), filter: 'all',
               neuronHead: 0, query: 0};
function node(tag, attrs, parent, text, ns) {
  const e = ns ? document.createElementNS(NS, tag) : document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
const svgNode = (tag, attrs, parent, text) => node(tag, attrs, parent, text, true);
function option(sel, value, label) { node('option', {value}, sel, label); }
const section = () => data.sections[state.section];
const width = () => Math.max(320, document.body.clientWidth - 8);

// The query rows and key columns the sentence filter keeps: [from, to) of each.
function ranges(s) {
  const b = s.sentence_b_start, nq = s.left.length, nk = s.right.length;
  if (b < 0 || state.filter === 'all') return {rows: [0, nq], cols: [0, nk]};
  const A = [0, b], B = [b, nq];
  return {aa: {rows: A, cols: A}, bb: {rows: B, cols: B},
          ab: {rows: A, cols: B}, ba: {rows: B, cols: A}}[state.filter];
}

// Lines from queries (left) to keys (right) of the given heads; with labels, hovering a token
// shows only its lines. The labels are built once: rebuilding the one under the cursor would
// lose its mouseleave, and the filter would stick.
function drawAttention(svg, s, layer, heads, o) {
  svg.innerHTML = '';
  const {rows, cols} = ranges(s);
  const rowH = o.rowH, top = o.labels ? 44 : 3;
  const leftX = o.labels ? Math.round(o.width * 0.32) : 3;
  const rightX = o.labels ? Math.round(o.width * 0.68) : o.width - 3;
  const n = Math.max(rows[1] - rows[0], cols[1] - cols[0]);
  svg.setAttribute('width', o.width);
  svg.setAttribute('height', top + Math.max(1, n) * rowH + (o.labels ? 8 : 3));
  const y = (k, from) => top + (k - from) * rowH;
  const lines = svgNode('g', {class: 'lines'}, svg);
  const drawLines = focus => {
    lines.innerHTML = '';
    for (const h of heads) {
      const w = s.layers[layer][h];
      for (let i = rows[0]; i < rows[1]; ++i) for (let j = cols[0]; j < cols[1]; ++j) {
        if (w[i][j] < 0.01) continue;
        if (focus && !(focus.side === 'left' ? focus.i === i : focus.i === j)) continue;
        svgNode('line', {x1: leftX + (o.labels ? 6 : 0), y1: y(i, rows[0]), x2: rightX - (o.labels ? 6 : 0),
                         y2: y(j, cols[0]), stroke: colors[h % colors.length],
                         'stroke-width': o.labels ? 2 : 1,
                         'stroke-opacity': Math.min(1, w[i][j] * (heads.length > 1 ? 1.2 : 1.5)),
                         'data-head': h, 'data-query': i, 'data-key': j}, lines);
      }
    }
  };
  if (o.labels) {
    svgNode('text', {x: leftX, y: 18, 'text-anchor': 'end', class: 'header'}, svg,
            s.predicts.length ? 'query (\u2192 the token it predicts)' : 'query');
    svgNode('text', {x: rightX, y: 18, class: 'header'}, svg, 'key');
    const label = (text, x, yy, side, i, anchor) => {
      const t = svgNode('text', {x, y: yy + 5, 'text-anchor': anchor, class: 'token ' + side,
                                 'data-index': i}, svg, text);
      t.addEventListener('mouseenter', () => { t.classList.add('focus'); drawLines({side, i}); });
      t.addEventListener('mouseleave', () => { t.classList.remove('focus'); drawLines(null); });
    };
    for (let i = rows[0]; i < rows[1]; ++i)
      label(s.left[i] + (s.predicts.length ? '  \u2192 ' + s.predicts[i] : ''), leftX,
            y(i, rows[0]), 'left', i, 'end');
    for (let j = cols[0]; j < cols[1]; ++j) label(s.right[j], rightX, y(j, cols[0]), 'right', j, 'start');
  }
  drawLines(null);
}

function headSquares(single) {
  const box = $('heads');
  box.innerHTML = '';
  const H = section().layers[0].length;
  for (let h = 0; h < H; ++h) {
    const on = single ? h === state.neuronHead : state.heads.has(h);
    const sq = node('span', {class: 'square' + (on ? ' on' : ''), title: 'head ' + h, 'data-head': h}, box);
    sq.style.background = colors[h % colors.length];
    if (single) { sq.onclick = () => { state.neuronHead = h; render(); }; continue; }
    sq.onclick = () => { state.heads.has(h) ? state.heads.delete(h) : state.heads.add(h); render(); };
    sq.ondblclick = () => { state.heads = new Set([h]); render(); };
  }
  if (!single && H > 1) {
    // One head at a time is readable; every head at once draws lines over each other. After the
    // squares, so that its label changing moves none of them.
    const all = state.heads.size === H;
    const b = node('button', {id: 'all-heads'}, box, all ? 'Show head 0 alone' : 'Show all heads');
    b.onclick = () => { state.heads = new Set(all ? [0] : section().layers[0].map((_, h) => h)); render(); };
  }
}

function headView() {
  headSquares(false);
  const s = section();
  drawAttention($('view'), s, state.layer, [...state.heads].sort((a, b) => a - b),
                {labels: true, rowH: 24, width: width()});
}

function modelView() {
  const s = section(), box = $('model');
  box.innerHTML = '';
  const H = s.layers[0].length, n = Math.max(s.left.length, s.right.length);
  const size = Math.max(48, Math.min(120, Math.floor((width() - 70) / H) - 6));
  s.layers.forEach((_, l) => {
    const row = node('div', {class: 'model-row'}, box);
    node('span', {class: 'model-label'}, row, 'layer ' + l);
    for (let h = 0; h < H; ++h) {
      const svg = svgNode('svg', {class: 'thumb', 'data-layer': l, 'data-head': h}, row);
      drawAttention(svg, s, l, [h], {labels: false, rowH: Math.max(1, (size - 6) / n), width: size});
      svg.onclick = () => zoom(l, h);
    }
  });
}

function zoom(l, h) {
  const z = $('zoom');
  z.innerHTML = '';
  z.style.display = 'block';
  const panel = node('div', {class: 'panel'}, z);
  node('button', {id: 'close'}, panel, 'close').onclick = () => { z.style.display = 'none'; };
  node('h3', {}, panel, section().name + ': layer ' + l + ', head ' + h);
  const svg = svgNode('svg', {id: 'zoomed'}, panel);
  drawAttention(svg, section(), l, [h], {labels: true, rowH: 24, width: Math.min(width() - 60, 900)});
}

// Blue for positive, orange for negative, as strong as the value against the largest shown.
function shade(v, scale) {
  const a = Math.min(1, Math.abs(v) / (scale || 1));
  return v >= 0 ? `rgba(31,119,180,${a})` : `rgba(255,127,14,${a})`;
}
function cells(parent, values, scale) {
  const box = node('span', {class: 'cells'}, parent);
  const w = Math.max(2, Math.min(8, Math.floor(260 / values.length)));
  for (const v of values) {
    const c = node('span', {class: 'cell', title: v.toFixed(3)}, box);
    c.style.width = w + 'px';
    c.style.background = shade(v, scale);
  }
}

function neuronView() {
  const s = section(), box = $('neuron');
  box.innerHTML = '';
  if (!s.queries) {
    node('p', {class: 'note'}, box, 'This section has no query and key vectors to show.');
    return;
  }
  headSquares(true);
  const {rows, cols} = ranges(s);
  if (state.query < rows[0] || state.query >= rows[1]) state.query = rows[0];
  const q = s.queries[state.layer][state.neuronHead][state.query];
  const keys = s.keys[state.layer][state.neuronHead];
  const d = q.length, scale = 1 / Math.sqrt(d);
  const js = [];
  for (let j = cols[0]; j < cols[1] && !(s.causal && j > state.query); ++j) js.push(j);
  const products = js.map(j => keys[j].map((k, e) => q[e] * k));
  const scores = products.map(p => p.reduce((a, b) => a + b, 0) * scale);
  const top = Math.max(...scores), exps = scores.map(x => Math.exp(x - top));
  const sum = exps.reduce((a, b) => a + b, 0), soft = exps.map(x => x / sum);
  const weights = js.map(j => s.layers[state.layer][state.neuronHead][state.query][j]);
  const vecScale = Math.max(...q.map(Math.abs), ...js.flatMap(j => keys[j].map(Math.abs)));
  const prodScale = Math.max(...products.flat().map(Math.abs));
  const scoreScale = Math.max(...scores.map(Math.abs));
  const layout = node('div', {class: 'neuron-layout'}, box);
  const list = node('div', {class: 'queries'}, layout);
  node('div', {class: 'header'}, list, 'query token');
  for (let i = rows[0]; i < rows[1]; ++i) {
    const t = node('div', {class: 'token left' + (i === state.query ? ' focus' : ''), 'data-index': i}, list,
                   s.left[i] + (s.predicts.length ? '  \u2192 ' + s.predicts[i] : ''));
    t.onmouseenter = t.onclick = () => { if (state.query !== i) { state.query = i; render(); } };
  }
  const table = node('table', {class: 'neuron'}, layout);
  const head = node('tr', {}, table);
  for (const h of ['key', 'q', 'k', 'q \u00d7 k', 'q \u00b7 k / \u221a' + d, 'softmax'])
    node('th', {}, head, h);
  js.forEach((j, r) => {
    const tr = node('tr', {'data-key': j}, table);
    node('td', {class: 'token'}, tr, s.right[j]);
    const qc = node('td', {}, tr);
    if (r === 0) cells(qc, q, vecScale);
    cells(node('td', {}, tr), keys[j], vecScale);
    cells(node('td', {}, tr), products[r], prodScale);
    const sc = node('td', {class: 'score'}, tr, scores[r].toFixed(2));
    sc.style.background = shade(scores[r], scoreScale);
    const sm = node('td', {class: 'softmax'}, tr);
    const bar = node('span', {class: 'bar'}, sm);
    bar.style.width = Math.round(soft[r] * 80) + 'px';
    node('span', {class: 'value'}, sm, soft[r].toFixed(3));
  });
  // A mask or a position bias (ALiBi, relative) adds to q . k: then the model's weights differ.
  const worst = Math.max(...soft.map((p, r) => Math.abs(p - weights[r])));
  node('p', {class: 'note'}, box, worst > 0.02
      ? `The model's weights differ from this softmax (by up to ${worst.toFixed(3)}): a mask or a position bias also enters its scores, or the filter hides some keys.`
      : 'This softmax is the attention weight the model used (to rounding).');
}

function fillSelectors() {
  const s = section(), layerSel = $('layer'), filter = $('filter');
  layerSel.innerHTML = '';
  s.layers.forEach((_, i) => option(layerSel, i, 'layer ' + i));
  state.layer = Math.min(state.layer, s.layers.length - 1);
  layerSel.value = state.layer;
  state.heads = new Set([0]);
  state.neuronHead = 0;
  state.query = 0;
  state.filter = 'all';
  filter.value = 'all';
  $('filter-box').style.display = s.sentence_b_start >= 0 ? '' : 'none';
}

function render() {
  // The page keeps its height while a view is rebuilt: a layout read mid-way would otherwise see
  // it shorter, pull the scroll position up, and move the token under the pointer.
  document.body.style.minHeight = document.body.scrollHeight + 'px';
  draw();
  document.body.style.minHeight = '';
}

function draw() {
  for (const v of ['head', 'model', 'neuron']) {
    $('tab-' + v).classList.toggle('active', state.view === v);
    $(v + '-view').style.display = state.view === v ? '' : 'none';
  }
  $('layer-box').style.display = state.view === 'model' ? 'none' : '';
  $('heads').style.display = state.view === 'model' ? 'none' : '';
  if (state.view === 'head') headView();
  else if (state.view === 'model') modelView();
  else neuronView();
}

data.sections.forEach((s, i) => option($('section'), i, s.name));
$('section').onchange = e => { state.section = Number(e.target.value); fillSelectors(); render(); };
$('layer').onchange = e => { state.layer = Number(e.target.value); render(); };
$('filter').onchange = e => { state.filter = e.target.value; render(); };
for (const v of ['head', 'model', 'neuron'])
  $('tab-' + v).onclick = () => { state.view = v; render(); };
document.addEventListener('keydown', e => { if (e.key === 'Escape') $('zoom').style.display = 'none'; });
let resizing = null;
window.addEventListener('resize', () => { clearTimeout(resizing); resizing = setTimeout(render, 100); });
fillSelectors();
render();
)JS";

constexpr const char* kStyle = R"CSS(
body{font-family:sans-serif;margin:16px 24px;color:#222}
select,button{margin-right:8px;font-size:14px}
.tabs button{border:1px solid #bbb;background:#f4f4f4;padding:4px 12px;cursor:pointer}
.tabs button.active{background:#fff;border-bottom-color:#fff;font-weight:bold}
.controls{margin:10px 0}
#heads{margin:6px 0;min-height:20px}
.square{display:inline-block;width:18px;height:18px;margin-right:4px;cursor:pointer;opacity:.25;
        border:2px solid transparent}
.square.on{opacity:1;border-color:#222}
svg{font-size:14px}
text.token{cursor:pointer}
text.token.focus,div.token.focus{font-weight:bold}
text.header,div.header{fill:#777;color:#777;font-size:12px}
p.note{color:#555;max-width:760px}
.model-row{display:flex;align-items:center;margin-bottom:4px}
.model-label{width:60px;font-size:12px;color:#555}
svg.thumb{border:1px solid #ddd;margin-right:4px;cursor:pointer;background:#fff}
#zoom{display:none;position:fixed;inset:0;background:rgba(0,0,0,.35);overflow:auto}
#zoom .panel{background:#fff;margin:30px auto;padding:12px 20px;max-width:940px}
.neuron-layout{display:flex;gap:24px;align-items:flex-start}
.queries div.token{cursor:pointer;padding:2px 4px}
table.neuron{border-collapse:collapse;font-size:13px}
table.neuron th{font-weight:normal;color:#777;text-align:left;padding:2px 8px}
table.neuron td{padding:2px 8px;white-space:nowrap}
.cells{display:inline-flex;height:14px;border:1px solid #eee}
.cell{display:inline-block;height:14px}
td.softmax .bar{display:inline-block;height:10px;background:#1f77b4;margin-right:6px}
)CSS";

}  // namespace

void write_attention_html(const std::string& path, const std::string& title,
                          const std::vector<AttentionSection>& sections, const std::string& note) {
  if (sections.empty()) throw Error("attention view: nothing to show (no sections)");
  nlohmann::json data;
  data["sections"] = nlohmann::json::array();
  for (const auto& s : sections) {
    check_section(s);
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& w : s.layers) layers.push_back(rounded(w));
    nlohmann::json section = {{"name", s.name},
                              {"left", s.left},
                              {"right", s.right},
                              {"layers", layers},
                              {"sentence_b_start", s.sentence_b_start},
                              {"predicts", s.predicts},
                              {"causal", s.causal}};
    if (!s.queries.empty()) {
      section["queries"] = nlohmann::json::array();
      section["keys"] = nlohmann::json::array();
      for (size_t l = 0; l < s.queries.size(); ++l) {
        section["queries"].push_back(rounded(s.queries[l]));
        section["keys"].push_back(rounded(s.keys[l]));
      }
    }
    data["sections"].push_back(section);
  }
  std::string json = data.dump();
  // The JSON sits inside a <script> element: keep "</" out of it.
  for (size_t p = 0; (p = json.find("</", p)) != std::string::npos; p += 3)
    json.replace(p, 2, "<\\/");
  const std::string page = fmt::format(
      R"(<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{0}</title>
<style>{3}</style></head>
<body><h2>{0}</h2>
{4}<div class="tabs"><button id="tab-head">Head view</button><button id="tab-model">Model view</button><button id="tab-neuron">Neuron view</button></div>
<div class="controls">Attention: <select id="section"></select>
<span id="layer-box">Layer: <select id="layer"></select></span>
<span id="filter-box">Sentences: <select id="filter"><option value="all">All</option>
<option value="aa">Sentence A &rarr; Sentence A</option><option value="bb">Sentence B &rarr; Sentence B</option>
<option value="ab">Sentence A &rarr; Sentence B</option><option value="ba">Sentence B &rarr; Sentence A</option></select></span></div>
<div id="heads"></div>
<div id="head-view"><p class="note">Each line joins a query token (left) to a key token (right);
the darker the line, the more attention. It opens on head 0 alone: the squares are the heads, in
their colours; click one to add or hide it, double-click to see it alone, or show all heads at
once. Hover a token to see only its lines.</p>
<svg id="view" xmlns="http://www.w3.org/2000/svg"></svg></div>
<div id="model-view"><p class="note">Every head of every layer at once (rows: layers, columns:
heads). Click a picture to enlarge it.</p><div id="model"></div></div>
<div id="neuron-view"><p class="note">How one head computes its weights: pick a head (square) and
hover a query token. Each key's vector k is multiplied with the query's q elementwise; the sum,
divided by &radic;d, is the score, and the softmax of the scores over the keys is the attention.
Blue is positive, orange negative.</p><div id="neuron"></div></div>
<div id="zoom"></div>
<script id="data" type="application/json">{1}</script>
<script>{2}</script>
</body></html>
)",
      escape_xml(title), json, kScript, kStyle,
      note.empty() ? std::string()
                   : fmt::format("<p class=\"note\" id=\"page-note\">{}</p>\n", escape_xml(note)));
  write_file_atomically(path, page);
}

namespace {

// The characters of a UTF-8 string (tokens such as "▁c" or "##ing" in any script), so that labels
// are measured and cut by what is seen, not by bytes.
std::vector<std::string> characters(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

size_t width_of(const std::vector<std::string>& labels) {
  size_t width = 0;
  for (const auto& l : labels) width = std::max(width, characters(l).size());
  return width;
}

// White at 0; blue below and red above for values of both signs (the scale symmetric about 0),
// white to dark blue for values of one sign, darker the further from 0. [lo, hi] holds 0.
std::string colour(float v, float lo, float hi) {
  auto mix = [](float t, int r, int g, int b) {
    t = std::clamp(t, 0.0f, 1.0f);
    return fmt::format("rgb({},{},{})", static_cast<int>(255 - t * (255 - r)),
                       static_cast<int>(255 - t * (255 - g)),
                       static_cast<int>(255 - t * (255 - b)));
  };
  if (lo < 0 && hi > 0) {
    const float m = std::max(-lo, hi);
    return v < 0 ? mix(-v / m, 33, 102, 172) : mix(v / m, 178, 24, 43);
  }
  if (hi <= 0 && lo < 0) return mix(v / lo, 8, 48, 107);  // every value <= 0
  return mix((v - lo) / (hi - lo), 8, 48, 107);
}

}  // namespace

std::string heatmap_svg(const Tensor& weights, const std::vector<std::string>& rows,
                        const std::vector<std::string>& cols, const std::string& title) {
  if (weights.dim() != 2 || weights.size(0) != static_cast<int64_t>(rows.size()) ||
      weights.size(1) != static_cast<int64_t>(cols.size()) || rows.empty() || cols.empty())
    throw Error(fmt::format("heatmap: weights {} do not match {} row and {} column labels",
                            weights.shape().str(), rows.size(), cols.size()));
  const auto v = weights.contiguous().to_vector();
  for (float x : v)
    if (!std::isfinite(x))
      throw Error(fmt::format("heatmap: '{}' has a non-finite value ({})", title, x));
  float lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
  if (lo > 0) lo = 0;  // one sign: white is 0 (attention weights, probabilities)
  if (hi < 0) hi = 0;
  if (lo < 0 && hi > 0) hi = std::max(-lo, hi), lo = -hi;  // both signs: symmetric about 0
  if (hi <= lo) hi = lo + 1;
  const auto R = static_cast<int>(rows.size()), C = static_cast<int>(cols.size());
  // Cells that fit a laptop screen (at most about 900 x 600 px of them), and every k-th label
  // where the cells are too small for each to have its own (labels 14 px apart).
  const int cell = std::clamp(std::min(900 / C, 600 / R), 4, 28);
  const int every = (14 + cell - 1) / cell;
  const int left = 16 + 7 * static_cast<int>(std::min<size_t>(20, width_of(rows)));
  const int top = 44 + 6 * static_cast<int>(std::min<size_t>(20, width_of(cols)));
  const int bar_x = left + C * cell + 24, bar_h = std::min(R * cell, 260);
  std::string s = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">)"
      "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      R"(<text x="10" y="20" font-size="14">{}</text>)"
      "\n",
      bar_x + 70, top + R * cell + 20, escape_xml(title));
  for (int j = 0; j < C; j += every)
    s += fmt::format(R"svg(<text transform="translate({},{}) rotate(-60)">{}</text>)svg"
                     "\n",
                     left + j * cell + cell / 2 + 4, top - 6, escape_xml(cols[j]));
  for (int i = 0; i < R; ++i) {
    if (i % every == 0)
      s += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">{}</text>)"
                       "\n",
                       left - 6, top + i * cell + cell / 2 + 4, escape_xml(rows[i]));
    for (int j = 0; j < C; ++j) {
      const float x = v[static_cast<size_t>(i * C + j)];
      s += fmt::format(
          R"svg(<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{:.3f}</title></rect>)svg"
          "\n",
          left + j * cell, top + i * cell, cell, cell, colour(x, lo, hi), x);
    }
  }
  // The colour bar: the scale from lo (bottom) to hi (top), with round ticks.
  s += "<defs><linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">";
  for (int k = 0; k <= 10; ++k)
    s += fmt::format("<stop offset=\"{}\" stop-color=\"{}\"/>", k / 10.0,
                     colour(lo + (hi - lo) * static_cast<float>(k) / 10.0f, lo, hi));
  s += "</linearGradient></defs>\n";
  s += fmt::format(
      R"svg(<rect class="colour-bar" x="{}" y="{}" width="14" height="{}" fill="url(#scale)" stroke="#999"/>)svg"
      "\n",
      bar_x, top, bar_h);
  const auto ticks = nice_ticks(lo, hi, 5);
  const double spacing = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  for (double t : ticks) {
    if (t < lo - 1e-9 || t > hi + 1e-9) continue;
    const double y = top + bar_h * (1.0 - (t - lo) / (hi - lo));
    s += fmt::format(R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#333"/>)"
                     R"(<text x="{}" y="{:.1f}">{}</text>)"
                     "\n",
                     bar_x + 14, bar_x + 18, y, y, bar_x + 21, y + 4, tick_label(t, spacing));
  }
  return s + "</svg>\n";
}

std::string terminal_heatmap(const Tensor& weights, const std::vector<std::string>& rows,
                             const std::vector<std::string>& cols) {
  if (weights.dim() != 2)
    throw Error(fmt::format("terminal_heatmap: expected a matrix, got {}", weights.shape().str()));
  static const char* shades[] = {"  ", "░░", "▒▒", "▓▓", "██"};
  const auto v = weights.contiguous().to_vector();
  float lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
  if (hi <= lo) hi = lo + 1;
  const size_t width = width_of(rows);
  std::string s;
  for (int64_t i = 0; i < weights.size(0); ++i) {
    const std::string label = i < static_cast<int64_t>(rows.size()) ? rows[i] : "";
    s += std::string(width - std::min(width, characters(label).size()), ' ') + label + " |";
    for (int64_t j = 0; j < weights.size(1); ++j) {
      const float t = (v[static_cast<size_t>(i * weights.size(1) + j)] - lo) / (hi - lo);
      s += shades[std::min(4, static_cast<int>(t * 4.999f))];
    }
    s += "|\n";
  }
  // Column labels written downwards, one character per line under each two-wide column, so that
  // "time" and "flies" stay whole instead of becoming "tifl".
  const size_t depth = std::min<size_t>(12, width_of(cols));
  for (size_t k = 0; k < depth; ++k) {
    s += std::string(width + 2, ' ');
    for (const auto& c : cols) {
      const auto chars = characters(c);
      s += (k < chars.size() ? chars[k] : " ") + " ";
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    s += "\n";
  }
  return s;
}

}  // namespace anatomy::viz
