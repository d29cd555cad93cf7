// The attention page's data (what tests/browser/ then checks in Chromium) and its input errors.
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "viz/attention_view.hpp"

using namespace anatomy;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / fmt::format("anatomy_{}_{}", getpid(), name))
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
