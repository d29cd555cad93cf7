// The loss curve a run writes: loss.csv's columns, and loss.svg's scale, axes and legend.
#include <cmath>
#include <regex>

#include "run_folders/loss_curve.hpp"
#include "training_fixtures.hpp"

using namespace anatomy;
using namespace anatomy::testing;

namespace {

// The text of curve's loss.svg, written in a fresh folder named after `name`.
std::string loss_svg(const training::LossCurve& curve, const std::string& name) {
  const std::string dir = fresh_dir(name);
  std::filesystem::create_directories(dir);
  curve.write_svg(dir + "/loss.svg", "a title");
  return bytes(dir + "/loss.svg");
}

// The number each match of `pattern` captures first, in the order they come.
std::vector<double> captured_numbers(const std::string& text, const std::string& pattern) {
  std::vector<double> out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it)
    out.push_back(std::stod((*it)[1]));
  return out;
}

}  // namespace

// loss.csv: one row per step in step order, an evaluation at a step with no training point
// gets a row of its own between the others, and each metric has its named column.
TEST_CASE("loss.csv names its columns and merges training and validation by step") {
  training::LossCurve curve;
  curve.train = {{20, 2.5, 0.001}, {40, 2.0, 0.002}, {60, 1.5, 0.003}};
  curve.eval = {{30, 2.25, {{"bleu", 12.5}, {"exact_match", 5.0}}},
                {60, 1.75, {{"bleu", 20.0}, {"exact_match", 10.0}}},
                {70, 1.5, {{"bleu", 25.0}}}};
  const std::string dir = fresh_dir("loss_csv");
  std::filesystem::create_directories(dir);
  curve.write_csv(dir + "/loss.csv");
  CHECK(bytes(dir + "/loss.csv") ==
        "step,train_loss,lr,valid_loss,valid_bleu,valid_exact_match\n"
        "20,2.500000,0.001,,,\n"
        "30,,,2.250000,12.5000,5.0000\n"
        "40,2.000000,0.002,,,\n"
        "60,1.500000,0.003,1.750000,20.0000,10.0000\n"
        "70,,,1.500000,25.0000,\n");
}

// loss.svg: a loss sits at the height of the tick that names it, a step at the x of its tick, and
// the y axis's title is centred on the axis, which spans exactly the ticks.
TEST_CASE("loss.svg puts each point on the axes' scale and centres the y title on its axis") {
  training::LossCurve curve;
  curve.train = {{0, 3.0, 0.001}, {50, 2.0, 0.002}, {100, 1.0, 0.003}};
  curve.eval = {{100, 1.5, {}}};
  const std::string svg = loss_svg(curve, "loss_svg");
  auto numbers_after = [&](const std::string& pattern) {
    std::vector<std::pair<double, double>> found;  // (label or first number, coordinate)
    const std::regex re(pattern);
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
         ++it)
      found.emplace_back(std::stod((*it)[2]), std::stod((*it)[1]));
    return found;
  };
  // y ticks: <text class="y-tick" x=".." y="Y + 4">LABEL</text>, the label 4 px below its line.
  std::map<double, double> y_of, x_of;
  for (const auto& t : numbers_after(R"re(class="y-tick" x="[^"]*" y="([\d.]+)"[^>]*>([\d.]+)<)re"))
    y_of[t.first] = t.second - 4;
  for (const auto& t : numbers_after(R"re(class="x-tick" x="([\d.]+)"[^>]*>([\d.]+)<)re"))
    x_of[t.first] = t.second;
  REQUIRE(y_of.count(1.0));
  REQUIRE(y_of.count(3.0));
  REQUIRE(x_of.count(0.0));
  REQUIRE(x_of.count(100.0));
  // The axes span exactly the ticks: the first x tick at the grid's left end, the last at its
  // right end, the lowest y tick on the x axis. (These anchor the ticks to the frame, so that a
  // scale that put every tick in one place could not pass the checks below.)
  std::smatch grid, axis;
  REQUIRE(std::regex_search(
      svg, grid,
      std::regex(
          R"re(<line x1="([\d.]+)" x2="([\d.]+)" y1="[\d.]+" y2="[\d.]+" stroke="#ddd")re")));
  REQUIRE(std::regex_search(
      svg, axis,
      std::regex(R"re(<line x1="[\d.]+" x2="[\d.]+" y1="([\d.]+)" y2="[\d.]+" stroke="black")re")));
  CHECK(x_of.begin()->second == doctest::Approx(std::stod(grid[1])));
  CHECK(x_of.rbegin()->second == doctest::Approx(std::stod(grid[2])));
  CHECK(y_of.begin()->second == doctest::Approx(std::stod(axis[1])));
  // Each x tick's label sits 18 px below the x axis, inside the picture.
  const auto x_label_ys = captured_numbers(svg, R"re(class="x-tick" x="[\d.]+" y="([\d.]+)")re");
  CHECK(x_label_ys.size() == x_of.size());
  for (const double y : x_label_ys) CHECK(y == doctest::Approx(std::stod(axis[1]) + 18));
  // The training line: step 0 at loss 3, step 100 at loss 1.
  const std::smatch line = [&] {
    std::smatch m;
    REQUIRE(std::regex_search(
        svg, m, std::regex(R"re(points="([\d.]+),([\d.]+) [\d.]+,[\d.]+ ([\d.]+),([\d.]+) ")re")));
    return m;
  }();
  CHECK(std::stod(line[1]) == doctest::Approx(x_of[0.0]).epsilon(1e-3));
  CHECK(std::stod(line[2]) == doctest::Approx(y_of[3.0]).epsilon(1e-3));
  CHECK(std::stod(line[3]) == doctest::Approx(x_of[100.0]).epsilon(1e-3));
  CHECK(std::stod(line[4]) == doctest::Approx(y_of[1.0]).epsilon(1e-3));
  std::smatch title;
  REQUIRE(
      std::regex_search(svg, title, std::regex(R"re(translate\(16,([\d.]+)\) rotate\(-90\))re")));
  const double top = y_of.rbegin()->second, bottom = y_of.begin()->second;
  CHECK(top < bottom);  // the highest loss is drawn highest
  CHECK(std::stod(title[1]) == doctest::Approx((top + bottom) / 2).epsilon(1e-3));
  // The plot's title is centred on the picture.
  std::smatch size, heading;
  REQUIRE(std::regex_search(svg, size, std::regex(R"re(<svg [^>]*width="([\d.]+)")re")));
  REQUIRE(std::regex_search(svg, heading, std::regex(R"re(<text x="([\d.]+)"[^>]*>a title<)re")));
  CHECK(std::stod(heading[1]) == doctest::Approx(std::stod(size[1]) / 2));
}

// The y axis starts at the lowest loss's tick, not at 0: losses between 5.2 and 6 (a language
// model's first steps) drawn from 0 would be a flat line at the top of the picture.
TEST_CASE("loss.svg's y axis spans the losses, not 0 to the highest") {
  training::LossCurve curve;
  curve.train = {{0, 6.0, 0.001}, {50, 5.6, 0.002}, {100, 5.2, 0.003}};
  const std::vector<double> labels =
      captured_numbers(loss_svg(curve, "loss_svg_range"), R"re(class="y-tick"[^>]*>([\d.]+)<)re");
  REQUIRE(labels.size() >= 2);
  const double lowest = *std::min_element(labels.begin(), labels.end());
  CHECK(lowest >= 5.0);
  CHECK(lowest <= 5.2);
  CHECK(*std::max_element(labels.begin(), labels.end()) >= 6.0);
}

// The x axis reaches the last point of either kind: the final evaluation comes after the last
// logged training loss (losses are logged every few steps), and its dot must not fall off the
// plot.
TEST_CASE("loss.svg's x axis reaches an evaluation after the last training point") {
  training::LossCurve curve;
  curve.train = {{0, 6.0, 0.001}, {50, 5.6, 0.002}, {100, 5.2, 0.003}};
  curve.eval = {{40, 5.8, {}}, {130, 5.1, {}}};
  const std::string svg = loss_svg(curve, "loss_svg_x_range");
  const auto labels = captured_numbers(svg, R"re(class="x-tick"[^>]*>([\d.]+)<)re");
  REQUIRE(labels.size() >= 2);
  CHECK(*std::max_element(labels.begin(), labels.end()) >= 130.0);
  const auto width = captured_numbers(svg, R"re(<svg [^>]*width="([\d.]+)")re");
  REQUIRE(width.size() == 1);
  // The evaluations' dots (the legend's dot is followed by its text, not a line break).
  const auto dots =
      captured_numbers(svg, R"re(<circle cx="([\d.]+)" cy="[\d.]+" r="4" fill="#d62728"/>\n)re");
  REQUIRE(dots.size() == 2);
  CHECK(dots[0] < dots[1]);
  CHECK(dots[1] < width[0]);
}

// The legend, top right: the training line's sample, its label, the evaluations' dot and its
// label, left to right on one row, inside the picture, each label with room for its ten
// characters (about 70 px at 12 px sans-serif) and its baseline 4 px below the marks' middle, as
// the y axis's labels have.
TEST_CASE("loss.svg's legend is one row inside the picture, each label beside its mark") {
  training::LossCurve curve;
  curve.train = {{0, 3.0, 0.001}, {100, 1.0, 0.002}};
  curve.eval = {{100, 1.5, {}}};
  const std::string svg = loss_svg(curve, "loss_svg_legend");
  std::smatch m;
  REQUIRE(std::regex_search(
      svg, m,
      std::regex(R"re(<line x1="([\d.]+)" x2="([\d.]+)" y1="([\d.]+)" y2="([\d.]+)" )re"
                 R"re(stroke="#1f77b4" stroke-width="2"/><text x="([\d.]+)" y="([\d.]+)">)re"
                 R"re(train loss</text><circle cx="([\d.]+)" cy="([\d.]+)" r="4" )re"
                 R"re(fill="#d62728"/><text x="([\d.]+)" y="([\d.]+)">valid loss</text>)re")));
  std::vector<double> v;
  for (size_t i = 1; i < m.size(); ++i) v.push_back(std::stod(m[i]));
  const double line_x1 = v[0], line_x2 = v[1], line_y1 = v[2], line_y2 = v[3], train_x = v[4],
               train_y = v[5], dot_x = v[6], dot_y = v[7], valid_x = v[8], valid_y = v[9];
  const auto width = captured_numbers(svg, R"re(<svg [^>]*width="([\d.]+)")re");
  REQUIRE(width.size() == 1);
  CHECK(line_y1 == line_y2);
  CHECK(dot_y == line_y1);
  CHECK(train_y == line_y1 + 4);
  CHECK(valid_y == line_y1 + 4);
  const auto title = captured_numbers(svg, R"re(<text x="[\d.]+" y="([\d.]+)" font-size="15")re");
  REQUIRE(title.size() == 1);
  CHECK(line_y1 - 6 > title[0]);  // below the title's baseline
  CHECK(0 < line_x1);
  CHECK(line_x1 < line_x2);
  CHECK(line_x2 < train_x);
  CHECK(train_x + 70 <= dot_x - 4);
  CHECK(dot_x + 4 < valid_x);
  CHECK(valid_x + 70 <= width[0]);
}

// A diverged evaluation (an infinite or NaN loss) is left off the plot: the axes span the finite
// losses, as they would without it, and no coordinate of the picture is "inf" or "nan".
TEST_CASE("loss.svg leaves out a loss that is not finite and keeps the others' scale") {
  training::LossCurve curve;
  curve.train = {{0, 3.0, 0.001}, {100, 1.0, 0.002}};
  curve.eval = {{50, INFINITY, {}}, {60, NAN, {}}, {100, 1.5, {}}};
  const std::string svg = loss_svg(curve, "loss_svg_not_finite");
  const auto labels = captured_numbers(svg, R"re(class="y-tick"[^>]*>([\d.]+)<)re");
  REQUIRE(labels.size() >= 2);
  CHECK(*std::min_element(labels.begin(), labels.end()) <= 1.0);
  CHECK(*std::max_element(labels.begin(), labels.end()) >= 3.0);
  CHECK(*std::max_element(labels.begin(), labels.end()) < 4.0);
  CHECK(svg.find("inf") == std::string::npos);
  CHECK(svg.find("nan") == std::string::npos);
  const auto dots =
      captured_numbers(svg, R"re(<circle cx="([\d.]+)" cy="[\d.]+" r="4" fill="#d62728"/>\n)re");
  CHECK(dots.size() == 1);
  // One loss alone: the axis is drawn around it, not from 0 to 1.
  training::LossCurve one;
  one.train = {{10, 5.0, 0.001}};
  const auto one_labels =
      captured_numbers(loss_svg(one, "loss_svg_one"), R"re(class="y-tick"[^>]*>([\d.]+)<)re");
  REQUIRE(!one_labels.empty());
  CHECK(*std::min_element(one_labels.begin(), one_labels.end()) <= 5.0);
  CHECK(*std::max_element(one_labels.begin(), one_labels.end()) >= 5.0);
}
