// The pictures: the attention page's data (what tests/browser/ then checks in Chromium) and its
// input errors, round axis ticks, the heatmaps' colour scale and labels.
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "helpers.hpp"
#include "viz/attention_view.hpp"
#include "viz/ticks.hpp"

using namespace anatomy;

namespace {

std::string temp_path(const std::string& name) {
  return (anatomy::testing::temp_root() / fmt::format("anatomy_{}_{}", getpid(), name))
      .string();  // one per process: ctest runs tests in parallel
}

// The JSON the page's script reads.
nlohmann::json page_data(const std::string& path) {
  std::ifstream f(path);
  std::string html(std::istreambuf_iterator<char>(f), {});
  const std::string open = "<script id=\"data\" type=\"application/json\">";
  const auto from = html.find(open) + open.size();
  std::string json = html.substr(from, html.find("</script>", from) - from);
  for (size_t p = 0; (p = json.find("<\\/", p)) != std::string::npos;) json.erase(p + 1, 1);
  return nlohmann::json::parse(json);
}

// The numbers of every match of `pattern`'s groups, in order, one vector per match.
std::vector<std::vector<double>> svg_numbers(const std::string& svg, const std::string& pattern) {
  std::vector<std::vector<double>> out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    std::vector<double> m;
    for (size_t g = 1; g < it->size(); ++g) m.push_back(std::stod((*it)[g].str()));
    out.push_back(m);
  }
  return out;
}

}  // namespace

// The page carries viz/attention_view.js and viz/attention_view.css whole, each in its element: the
// build embeds the files as they are, and a change to either reaches the page.
TEST_CASE("attention page: its script and style sheet are viz/attention_view.js and .css") {
  const std::string path = temp_path("attention_assets.html");
  const std::vector<std::string> tokens = {"a", "b"};
  const viz::AttentionSection s{"self", tokens, tokens, {softmax(randn({1, 2, 2}), -1)}};
  viz::write_attention_html(path, "t", {s});
  const auto read = [](const std::string& file) {
    std::ifstream f(file);
    REQUIRE(f);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  const std::string html = read(path), viz_dir = std::string(ANATOMY_TEST_DIR) + "/../viz/";
  const std::string script = read(viz_dir + "attention_view.js");
  const std::string style = read(viz_dir + "attention_view.css");
  CHECK(script.find("function drawAttention") != std::string::npos);
  CHECK(style.find("table.neuron") != std::string::npos);
  CHECK(html.find("<script>\n" + script + "</script>") != std::string::npos);
  CHECK(html.find("<style>\n" + style + "</style>") != std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("attention page: a pair, predictions and the neuron view's vectors reach the page") {
  const std::string path = temp_path("attention_view.html");
  const std::vector<std::string> tokens = {"[CLS]", "a", "[SEP]", "b", "[SEP]"};
  viz::AttentionSection s{"self", tokens, tokens, {softmax(randn({2, 5, 5}), -1)}};
  s.sentence_b_start = 3;
  s.predicts = {"x", "y", "z", "w", "v"};
  s.causal = true;
  s.queries = {randn({2, 5, 3})};
  s.keys = {randn({2, 5, 3})};
  viz::write_attention_html(path, "a </script> title", {s});
  const auto data = page_data(path);
  const auto& got = data["sections"][0];
  CHECK(got["sentence_b_start"] == 3);
  CHECK(got["predicts"] == nlohmann::json(s.predicts));
  CHECK(got["causal"] == true);
  // Rounded to the 3 decimals the page shows, head by head, row by row.
  CHECK(got["queries"][0][1][4][2].get<double>() ==
        doctest::Approx(s.queries[0].select(0, 1).select(0, 4).select(0, 2).item()).epsilon(2e-3));
  CHECK(got["layers"][0][1][2][3].get<double>() ==
        doctest::Approx(s.layers[0].select(0, 1).select(0, 2).select(0, 3).item()).epsilon(2e-3));
  std::ifstream f(path);
  const std::string html(std::istreambuf_iterator<char>(f), {});
  CHECK(html.find("<title>a &lt;/script&gt; title</title>") != std::string::npos);
  for (const char* view : {"id=\"tab-head\"", "id=\"tab-model\"", "id=\"tab-neuron\""})
    CHECK(html.find(view) != std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("attention page: sections that do not fit their tokens are refused by name") {
  const std::string path = temp_path("attention_view_bad.html");
  const std::vector<std::string> three = {"a", "b", "c"};
  auto expect = [&](const viz::AttentionSection& s, const std::string& part) {
    std::filesystem::remove(path);
    try {
      viz::write_attention_html(path, "t", {s});
      FAIL("no error for: " << part);
    } catch (const Error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(part) != std::string::npos, e.what());
    }
    CHECK_FALSE(std::filesystem::exists(path));
  };
  const Tensor w = softmax(randn({2, 3, 3}), -1);
  expect({"s", three, {"a", "b"}, {w}}, "'s' layer 0 has weights [2, 3, 3] but 3 x 2 tokens");
  expect({"s", three, three, {w, softmax(randn({4, 3, 3}), -1)}}, "the same heads in every layer");
  viz::AttentionSection pair{"s", three, three, {w}};
  pair.sentence_b_start = 3;
  expect(pair, "sentence_b_start 3");
  pair.sentence_b_start = -1;
  pair.predicts = {"x"};
  expect(pair, "1 predicted tokens for 3 query rows");
  pair.predicts.clear();
  pair.queries = {randn({2, 3, 4})};
  pair.keys = {randn({2, 3, 5})};
  expect(pair, "layer 0 has queries [2, 3, 4] and keys [2, 3, 5]");
  pair.keys.clear();
  expect(pair, "queries/keys for 1/0 of its 1 layers");
  CHECK_THROWS_WITH_AS(viz::write_attention_html(path, "t", {}), doctest::Contains("no sections"),
                       Error);
}

TEST_CASE("nice_ticks: round steps of 1, 2 or 5 times a power of ten that cover the range") {
  const auto a = viz::nice_ticks(0, 1, 5);  // raw step 0.25 -> 0.5
  CHECK(a == std::vector<double>{0, 0.5, 1});
  const auto b = viz::nice_ticks(2.93, 3.16, 5);  // raw 0.0575 -> 0.1
  REQUIRE(b.size() == 4);
  CHECK(b.front() == doctest::Approx(2.9));
  CHECK(b.back() == doctest::Approx(3.2));
  CHECK(viz::nice_ticks(0, 81, 6) == std::vector<double>{0, 20, 40, 60, 80, 100});  // raw 16.2
  CHECK(viz::nice_ticks(-1, 1, 5) == std::vector<double>{-1, -0.5, 0, 0.5, 1});
  CHECK(viz::nice_ticks(7, 7, 5).front() <= 7);  // one value still gets an axis
  CHECK(viz::tick_label(0.5, 0.5) == "0.5");
  CHECK(viz::tick_label(3.2, 0.1) == "3.2");
  CHECK(viz::tick_label(40, 20) == "40");
  CHECK(viz::tick_label(0.25, 0.05) == "0.25");
  CHECK_THROWS_WITH_AS(viz::nice_ticks(1, 0), doctest::Contains("lo <= hi"), Error);
  CHECK_THROWS_AS(viz::nice_ticks(0, std::nan("")), Error);
}

TEST_CASE("nice_ticks: a range far below 1 keeps its ticks apart, and only zero is shown as 0") {
  // A flat loss curve's range: the cut to 0 that hides "-0" is relative to the step, so ticks of
  // 1e-15 are not all taken for zero.
  const auto t = viz::nice_ticks(-2e-15, 2e-15, 5);
  REQUIRE(t.size() == 5);
  CHECK(t[0] == doctest::Approx(-2e-15).scale(1e-15));
  CHECK(t[1] == doctest::Approx(-1e-15).scale(1e-15));
  CHECK(t[2] == 0.0);
  CHECK_FALSE(std::signbit(t[2]));
  CHECK(t[3] == doctest::Approx(1e-15).scale(1e-15));
  CHECK(t[4] == doctest::Approx(2e-15).scale(1e-15));
}

TEST_CASE("heatmap_svg: a diverging scale with a colour bar for values of both signs") {
  const Tensor w = tensor({{-1.0f, 0.0f}, {0.5f, 1.0f}});
  const std::string svg = viz::heatmap_svg(w, {"r0", "r1"}, {"c0", "c1"}, "both <signs>");
  CHECK(svg.find("both &lt;signs&gt;") != std::string::npos);
  CHECK(svg.find("fill=\"rgb(33,102,172)\"><title>-1.000") != std::string::npos);  // blue
  CHECK(svg.find("fill=\"rgb(255,255,255)\"><title>0.000") != std::string::npos);  // white
  CHECK(svg.find("fill=\"rgb(178,24,43)\"><title>1.000") != std::string::npos);    // red
  CHECK(svg.find("class=\"colour-bar\"") != std::string::npos);
  for (const std::string tick : {">-1.0<", ">-0.5<", ">0.0<", ">0.5<", ">1.0<"})
    CHECK_MESSAGE(svg.find(tick) != std::string::npos, tick);
  // Attention weights (one sign): white is 0, not the smallest weight.
  const std::string one_sign =
      viz::heatmap_svg(tensor({{0.2f, 0.8f}}), {"q"}, {"k0", "k1"}, "weights");
  CHECK(one_sign.find("fill=\"rgb(255,255,255)\"") == std::string::npos);
  // 50 x 64 cells fit a laptop screen, and labels thin out instead of overlapping.
  const std::string big = viz::heatmap_svg(zeros({50, 64}), std::vector<std::string>(50, "p"),
                                           std::vector<std::string>(64, "d"), "pe");
  const int width = std::atoi(big.c_str() + big.find("width=\"") + 7);
  const int height = std::atoi(big.c_str() + big.find("height=\"") + 8);
  CHECK(width <= 1000);
  CHECK(height <= 760);
  // So do 2 x 200 (a long sentence's row of weights): the columns decide the cells' size.
  const std::string wide = viz::heatmap_svg(zeros({2, 200}), std::vector<std::string>(2, "q"),
                                            std::vector<std::string>(200, "k"), "wide");
  CHECK(std::atoi(wide.c_str() + wide.find("width=\"") + 7) <= 1000);
  CHECK_THROWS_WITH_AS(viz::heatmap_svg(tensor({{std::nanf("")}}), {"a"}, {"b"}, "t"),
                       doctest::Contains("non-finite"), Error);
}

TEST_CASE("heatmap_svg: labels sit beside their own row and column, the scale beside the cells") {
  // 3 rows and 4 columns of distinct values of both signs.
  const Tensor w = tensor(
      {{-2.0f, -1.0f, 0.0f, 1.0f}, {0.5f, 1.5f, -0.5f, 2.0f}, {-1.5f, 0.25f, 0.75f, -0.25f}});
  const std::vector<std::string> rows{"first", "second", "third"}, cols{"a", "bb", "ccc", "dddd"};
  const std::string svg = viz::heatmap_svg(w, rows, cols, "layout");
  // The cells: x, y, width, height, in row-major order.
  const auto cells =
      svg_numbers(svg, R"svg(<rect x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)" fill="rgb)svg");
  REQUIRE(cells.size() == 12);
  const double cell = cells[0][2], left = cells[0][0], top = cells[0][1];
  CHECK(cell >= 4);
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 4; ++j) {
      const auto& c = cells[i * 4 + j];
      CHECK(c[0] == left + static_cast<double>(j) * cell);
      CHECK(c[1] == top + static_cast<double>(i) * cell);
    }
  const double bottom = top + 3 * cell, right = left + 4 * cell;
  // Row labels: right-aligned just left of the cells, each within its own row's height.
  const auto row_labels = svg_numbers(svg, R"svg(<text x="(\d+)" y="(\d+)" text-anchor="end">)svg");
  REQUIRE(row_labels.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(row_labels[i][0] < left);
    CHECK(row_labels[i][0] > left - cell);
    CHECK(row_labels[i][1] > top + static_cast<double>(i) * cell);
    CHECK(row_labels[i][1] < top + static_cast<double>(i + 1) * cell);
  }
  // Column labels: rising from just above the cells, each starting within its own column.
  const auto col_labels = svg_numbers(svg, R"svg(translate\((\d+),(\d+)\) rotate\(-60\))svg");
  REQUIRE(col_labels.size() == 4);
  for (size_t j = 0; j < 4; ++j) {
    CAPTURE(j);
    CHECK(col_labels[j][0] > left + static_cast<double>(j) * cell);
    CHECK(col_labels[j][0] < left + static_cast<double>(j + 1) * cell);
    CHECK(col_labels[j][1] < top);
    CHECK(col_labels[j][1] > top - cell);
  }
  // The picture holds the cells with a small margin below.
  const auto size = svg_numbers(svg, R"svg(<svg [^>]*width="(\d+)" height="(\d+)")svg");
  REQUIRE(size.size() == 1);
  CHECK(size[0][1] >= bottom);
  CHECK(size[0][1] <= bottom + 40);
  // The colour bar: to the right of the cells, as tall as they are (they are short), from -2 at
  // its bottom to 2 at its top.
  const auto bar =
      svg_numbers(svg, R"svg(class="colour-bar" x="(\d+)" y="(\d+)" width="14" height="(\d+)")svg");
  REQUIRE(bar.size() == 1);
  CHECK(bar[0][0] > right);
  CHECK(bar[0][0] <= right + 40);
  CHECK(size[0][0] >= bar[0][0] + 14);  // the bar and its tick labels, and little more
  CHECK(size[0][0] <= bar[0][0] + 100);
  CHECK(bar[0][1] == top);
  CHECK(bar[0][2] == 3 * cell);
  const auto ticks = svg_numbers(svg, R"svg(<line x1="\d+" x2="\d+" y1="([-\d.]+)")svg");
  const auto tick_labels = svg_numbers(svg, R"svg(<text x="\d+" y="[-\d.]+">([-\d.]+)<)svg");
  REQUIRE(ticks.size() == 5);
  REQUIRE(tick_labels.size() == 5);
  for (size_t k = 0; k < 5; ++k) {
    CAPTURE(k);
    const double value = -2.0 + static_cast<double>(k);  // ticks at -2, -1, 0, 1, 2
    CHECK(tick_labels[k][0] == value);
    CHECK(ticks[k][0] == doctest::Approx(bottom - (value + 2) / 4 * 3 * cell).epsilon(1e-3));
  }
}

TEST_CASE("heatmap_svg: values of one sign, zero included, keep a one-sided scale") {
  // Every value <= 0 with 0 among them: the scale runs from the smallest to 0, white at 0, and
  // reaches no positive tick.
  const std::string svg =
      viz::heatmap_svg(tensor({{-2.0f, -1.0f}, {0.0f, -0.5f}}), {"r0", "r1"}, {"c0", "c1"}, "t");
  CHECK(svg.find("fill=\"rgb(255,255,255)\"><title>0.000") != std::string::npos);
  CHECK(svg.find("fill=\"rgb(8,48,107)\"><title>-2.000") != std::string::npos);  // darkest
  const auto labels = svg_numbers(svg, R"svg(<text x="\d+" y="[-\d.]+">([-\d.]+)<)svg");
  REQUIRE_FALSE(labels.empty());
  CHECK(labels.front()[0] == -2.0);
  CHECK(labels.back()[0] == 0.0);
}

TEST_CASE("terminal_heatmap: column labels written downwards, whole") {
  const std::string s =
      viz::terminal_heatmap(tensor({{0.0f, 1.0f}, {1.0f, 0.0f}}), {"time", "▁c"}, {"time", "▁c"});
  CHECK(s == "time |  ██|\n  ▁c |██  |\n      t ▁\n      i c\n      m\n      e\n");
}
