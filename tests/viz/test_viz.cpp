// The pictures: the attention page's data (what tests/browser/ then checks in Chromium) and its
// input errors, round axis ticks, the heatmaps' colour scale and labels.
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

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

}  // namespace

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
  CHECK_THROWS_WITH_AS(viz::heatmap_svg(tensor({{std::nanf("")}}), {"a"}, {"b"}, "t"),
                       doctest::Contains("non-finite"), Error);
}

TEST_CASE("terminal_heatmap: column labels written downwards, whole") {
  const std::string s =
      viz::terminal_heatmap(tensor({{0.0f, 1.0f}, {1.0f, 0.0f}}), {"time", "▁c"}, {"time", "▁c"});
  CHECK(s == "time |  ██|\n  ▁c |██  |\n      t ▁\n      i c\n      m\n      e\n");
}
