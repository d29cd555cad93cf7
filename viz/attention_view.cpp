#include "viz/attention_view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "autograd/safetensors.hpp"

namespace anatomy::viz {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

void check_section(const AttentionSection& s) {
  for (size_t l = 0; l < s.layers.size(); ++l) {
    const Tensor& w = s.layers[l];
    if (w.dim() != 3 || w.size(1) != static_cast<int64_t>(s.left.size()) ||
        w.size(2) != static_cast<int64_t>(s.right.size()))
      throw Error(fmt::format(
          "attention view: '{}' layer {} has weights {} but {} x {} tokens (expected [heads, "
          "{}, {}])",
          s.name, l, w.shape().str(), s.left.size(), s.right.size(), s.left.size(),
          s.right.size()));
  }
}

// The page's script: draws the selected section / layer / head with plain DOM and SVG.
constexpr const char* kScript = R"JS(
const data = JSON.parse(document.getElementById('data').textContent);
const colors = ['#1f77b4','#ff7f0e','#2ca02c','#d62728','#9467bd','#8c564b','#e377c2','#7f7f7f',
                '#bcbd22','#17becf','#393b79','#ad494a','#637939','#8c6d31','#843c39','#7b4173'];
const sectionSel = document.getElementById('section'), layerSel = document.getElementById('layer'),
      headSel = document.getElementById('head'), svg = document.getElementById('view');
let focus = null;
function option(sel, value, label) { const o = document.createElement('option'); o.value = value; o.textContent = label; sel.appendChild(o); }
data.sections.forEach((s, i) => option(sectionSel, i, s.name));
function fillSelectors() {
  const s = data.sections[sectionSel.value];
  layerSel.innerHTML = ''; headSel.innerHTML = '';
  s.layers.forEach((_, i) => option(layerSel, i, 'layer ' + i));
  option(headSel, 'all', 'all heads');
  s.layers[0].forEach((_, h) => option(headSel, h, 'head ' + h));
}
// The tokens are drawn once per selection; hovering redraws only the lines. (Rebuilding the
// label under the cursor on mouseenter would lose its mouseleave, and the filter would stick.)
let lines = null;
function draw() {
  const s = data.sections[sectionSel.value];
  const rowH = 26, top = 30, leftX = 160, rightX = 460;
  const n = Math.max(s.left.length, s.right.length);
  svg.setAttribute('height', top + n * rowH + 10);
  svg.innerHTML = '';
  focus = null;
  const ns = 'http://www.w3.org/2000/svg';
  lines = document.createElementNS(ns, 'g');
  svg.appendChild(lines);
  const label = (text, x, y, anchor, side, i) => {
    const t = document.createElementNS(ns, 'text');
    t.setAttribute('x', x); t.setAttribute('y', y + 5); t.setAttribute('text-anchor', anchor);
    t.textContent = text; t.style.cursor = 'pointer';
    t.addEventListener('mouseenter', () => { focus = {side, i}; t.style.fontWeight = 'bold'; drawLines(); });
    t.addEventListener('mouseleave', () => { focus = null; t.style.fontWeight = ''; drawLines(); });
    svg.appendChild(t);
  };
  s.left.forEach((tok, i) => label(tok, leftX, top + i * rowH, 'end', 'l', i));
  s.right.forEach((tok, j) => label(tok, rightX, top + j * rowH, 'start', 'r', j));
  drawLines();
}
function drawLines() {
  const s = data.sections[sectionSel.value], layer = s.layers[layerSel.value];
  const rowH = 26, top = 30, leftX = 160, rightX = 460, ns = 'http://www.w3.org/2000/svg';
  lines.innerHTML = '';
  const heads = headSel.value === 'all' ? layer.map((_, h) => h) : [Number(headSel.value)];
  for (const h of heads)
    layer[h].forEach((row, i) => row.forEach((w, j) => {
      if (w < 0.01 || (focus && !((focus.side === 'l' && focus.i === i) || (focus.side === 'r' && focus.i === j)))) return;
      const line = document.createElementNS(ns, 'line');
      line.setAttribute('x1', leftX + 8); line.setAttribute('y1', top + i * rowH);
      line.setAttribute('x2', rightX - 8); line.setAttribute('y2', top + j * rowH);
      line.setAttribute('stroke', colors[h % colors.length]);
      line.setAttribute('stroke-width', 2); line.setAttribute('stroke-opacity', Math.min(1, w * (heads.length > 1 ? 1.2 : 1.5)));
      lines.appendChild(line);
    }));
}
sectionSel.onchange = () => { fillSelectors(); draw(); };
layerSel.onchange = drawLines; headSel.onchange = drawLines;
fillSelectors(); draw();
)JS";

}  // namespace

void write_attention_html(const std::string& path, const std::string& title,
                          const std::vector<AttentionSection>& sections) {
  if (sections.empty()) throw Error("attention view: nothing to show (no sections)");
  nlohmann::json data;
  data["sections"] = nlohmann::json::array();
  for (const auto& s : sections) {
    check_section(s);
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& w : s.layers) {
      nlohmann::json heads = nlohmann::json::array();
      for (int64_t h = 0; h < w.size(0); ++h) {
        nlohmann::json rows = nlohmann::json::array();
        for (int64_t i = 0; i < w.size(1); ++i) {
          std::vector<double> row;
          for (float v : w.select(0, h).select(0, i).to_vector())
            row.push_back(std::round(v * 1000.0) / 1000.0);
          rows.push_back(row);
        }
        heads.push_back(rows);
      }
      layers.push_back(heads);
    }
    data["sections"].push_back(
        {{"name", s.name}, {"left", s.left}, {"right", s.right}, {"layers", layers}});
  }
  std::string json = data.dump();
  // The JSON sits inside a <script> element: keep "</" out of it.
  for (size_t p = 0; (p = json.find("</", p)) != std::string::npos; p += 3)
    json.replace(p, 2, "<\\/");
  const std::string page = fmt::format(R"(<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{0}</title>
<style>body{{font-family:sans-serif;margin:24px}} select{{margin-right:8px}} svg{{font-size:14px}}
p.note{{color:#555;max-width:640px}}</style></head>
<body><h2>{0}</h2>
<p class="note">Each line joins a token on the left (a query) to a token on the right (a key); the
darker the line, the more attention. Hover a token to see only its lines.</p>
<div><select id="section"></select><select id="layer"></select><select id="head"></select></div>
<svg id="view" width="640" height="200" xmlns="http://www.w3.org/2000/svg"></svg>
<script id="data" type="application/json">{1}</script>
<script>{2}</script>
</body></html>
)",
                                       escape(title), json, kScript);
  write_file_atomically(path, page);
}

std::string heatmap_svg(const Tensor& weights, const std::vector<std::string>& rows,
                        const std::vector<std::string>& cols, const std::string& title) {
  if (weights.dim() != 2 || weights.size(0) != static_cast<int64_t>(rows.size()) ||
      weights.size(1) != static_cast<int64_t>(cols.size()))
    throw Error(fmt::format("heatmap: weights {} do not match {} row and {} column labels",
                            weights.shape().str(), rows.size(), cols.size()));
  const int cell = 28, left = 120, top = 110;
  const auto v = weights.contiguous().to_vector();
  float lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
  if (hi <= lo) hi = lo + 1;
  const auto R = static_cast<int>(rows.size()), C = static_cast<int>(cols.size());
  std::string s = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">)"
      "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      R"(<text x="10" y="20" font-size="14">{}</text>)"
      "\n",
      left + C * cell + 20, top + R * cell + 20, escape(title));
  for (int j = 0; j < C; ++j)
    s += fmt::format(R"svg(<text transform="translate({},{}) rotate(-60)">{}</text>)svg"
                     "\n",
                     left + j * cell + cell / 2 + 4, top - 6, escape(cols[j]));
  for (int i = 0; i < R; ++i) {
    s += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">{}</text>)"
                     "\n",
                     left - 6, top + i * cell + cell / 2 + 4, escape(rows[i]));
    for (int j = 0; j < C; ++j) {
      const float t = (v[static_cast<size_t>(i * C + j)] - lo) / (hi - lo);  // white -> dark blue
      const int r = static_cast<int>(255 - t * 247), g = static_cast<int>(255 - t * 207),
                b = static_cast<int>(255 - t * 148);
      s += fmt::format(
          R"svg(<rect x="{}" y="{}" width="{}" height="{}" fill="rgb({},{},{})"><title>{:.3f}</title></rect>)svg"
          "\n",
          left + j * cell, top + i * cell, cell, cell, r, g, b, v[static_cast<size_t>(i * C + j)]);
    }
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
  size_t width = 0;
  for (const auto& r : rows) width = std::max(width, r.size());
  std::string s;
  for (int64_t i = 0; i < weights.size(0); ++i) {
    const std::string label = i < static_cast<int64_t>(rows.size()) ? rows[i] : "";
    s += std::string(width - std::min(width, label.size()), ' ') + label + " |";
    for (int64_t j = 0; j < weights.size(1); ++j) {
      const float t = (v[static_cast<size_t>(i * weights.size(1) + j)] - lo) / (hi - lo);
      s += shades[std::min(4, static_cast<int>(t * 4.999f))];
    }
    s += "|\n";
  }
  if (!cols.empty()) {
    s += std::string(width + 2, ' ');
    for (const auto& c : cols)
      s += c.substr(0, 2) + std::string(2 - std::min<size_t>(2, c.substr(0, 2).size()), ' ');
    s += "\n";
  }
  return s;
}

}  // namespace anatomy::viz
