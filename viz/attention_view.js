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
