#include "viz/attention_view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "io/safetensors.hpp"
#include "viz/ticks.hpp"
#include "viz/xml.hpp"

namespace anatomy::viz {

// The page's script, which draws the three views with plain DOM and SVG from the JSON data, and
// its style sheet: viz/attention_view.js and viz/attention_view.css, compiled into the library
// at build time (viz/CMakeLists.txt), so that the page needs no file beside the library.
extern const char* const kAttentionViewScript;
extern const char* const kAttentionViewStyle;

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
<style>
{3}</style></head>
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
<script>
{2}</script>
</body></html>
)",
      escape_xml(title), json, kAttentionViewScript, kAttentionViewStyle,
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
