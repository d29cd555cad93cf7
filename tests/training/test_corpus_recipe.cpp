// The size and epochs a corpus run plans from its data, its time budget and what each size
// costs, here with the costs given instead of measured.
#include <map>

#include "helpers.hpp"
#include "models/config.hpp"
#include "training/corpus_recipe.hpp"

using namespace anatomy;
using training::CorpusSize;
using training::plan_corpus_run;
using training::SizeCost;

namespace {

// A `measure` that returns the given cost of each size and counts its calls.
struct Costs {
  std::map<std::string, SizeCost> of;
  std::vector<std::string> asked;
  std::function<SizeCost(const CorpusSize&)> measure() {
    return [this](const CorpusSize& s) {
      asked.push_back(s.name);
      return of.at(s.name);
    };
  }
};

const int64_t kTatoeba = 323208;  // Tatoeba eng-deu's target tokens an epoch

}  // namespace

TEST_CASE("corpus plan: the largest size whose measured cost buys 20 epochs, and its epochs") {
  const auto& sizes = training::corpus_sizes();
  REQUIRE(sizes.size() == 2);
  CHECK(sizes[0].name == "small");
  CHECK(sizes[1].name == "medium");
  CHECK(models::TransformerConfig::preset(sizes[1].name).hidden_size == 256);

  // 900 s, 10 of them spent measuring: small's epoch takes 12.625 + 2 s and medium's 30.49 + 3,
  // so medium gets about 26.6 epochs and is chosen. The epochs count the measuring and the
  // evaluations: without them they would be 26.9 or 29.2.
  Costs costs{.of = {{"small", {25600, 2, 4}}, {"medium", {10600, 3, 6}}}};
  const auto plan = plan_corpus_run(kTatoeba, 900, 2, costs.measure());
  CHECK(plan.size.name == "medium");
  CHECK(costs.asked == std::vector<std::string>{"small", "medium"});
  CHECK(plan.epochs == doctest::Approx(890.0 / (kTatoeba / 10600.0 + 3)).epsilon(1e-9));
  CHECK(plan.tokens_per_second == 10600);
  CHECK(plan.epoch_overhead == 3);
  CHECK(plan.measure_seconds == 10);
  CHECK(plan.threads == 2);
  REQUIRE(plan.measured.size() == 2);
  CHECK(plan.measured[0] == std::pair<std::string, double>{"small", 25600});
  CHECK(plan.measured[1] == std::pair<std::string, double>{"medium", 10600});
  CHECK_MESSAGE(plan.why.find("about 27 epochs of 323208 target tokens (the largest size that "
                              "gets 20)") != std::string::npos,
                plan.why);
  CHECK(training::describe(plan, 900) ==
        "plan: medium, 10.6k tok/s measured on 2 threads, about 27 epochs in 15:00");

  // A slower medium (18 epochs) leaves small, with small's own epochs.
  costs = {.of = {{"small", {25600, 2, 4}}, {"medium", {7000, 3, 6}}}};
  const auto slow = plan_corpus_run(kTatoeba, 900, 2, costs.measure());
  CHECK(slow.size.name == "small");
  CHECK(slow.epochs == doctest::Approx(890.0 / (kTatoeba / 25600.0 + 2)).epsilon(1e-9));
  CHECK(slow.tokens_per_second == 25600);
}

TEST_CASE(
    "corpus plan: what measuring costs is out of the budget, and no more is measured than "
    "can pay") {
  // Medium's epoch takes 40 s: 900 s would buy it 22.5 epochs, but measuring it took 120 s, and
  // the 780 left buy 19.5: small.
  Costs costs{.of = {{"small", {100000, 0, 0}}, {"medium", {kTatoeba / 38.0, 2, 120}}}};
  const auto plan = plan_corpus_run(kTatoeba, 900, 1, costs.measure());
  CHECK(plan.size.name == "small");
  CHECK(plan.measure_seconds == 120);
  CHECK(plan.epochs == doctest::Approx(780.0 / (kTatoeba / 100000.0)).epsilon(1e-9));

  // Small gets 9 epochs of 300 s, so medium (slower) cannot get 20 and is not measured.
  costs = {.of = {{"small", {10000, 0, 1}}, {"medium", {5000, 0, 1}}}};
  const auto short_run = plan_corpus_run(kTatoeba, 300, 1, costs.measure());
  CHECK(costs.asked == std::vector<std::string>{"small"});
  CHECK(short_run.size.name == "small");
  CHECK(short_run.measured.size() == 1);
  CHECK_MESSAGE(short_run.why.find("(the smallest size)") != std::string::npos, short_run.why);

  // A corpus under medium's minimum is not measured for it, whatever the budget.
  const auto& sizes = training::corpus_sizes();
  costs = {.of = {{"small", {10000, 0, 1}}, {"medium", {5000, 0, 1}}}};
  CHECK(plan_corpus_run(sizes[1].min_corpus_tokens - 1, 1e6, 2, costs.measure()).size.name ==
        "small");
  CHECK(costs.asked == std::vector<std::string>{"small"});
  CHECK(plan_corpus_run(sizes[1].min_corpus_tokens, 1e6, 2, costs.measure()).size.name == "medium");
}

TEST_CASE("corpus plan: exactly 20 epochs is enough, and no budget measures nothing") {
  // 200,000 tokens at 10,000 a second: 20 s an epoch, so 400 s buy medium exactly 20.
  Costs costs{.of = {{"small", {20000, 0, 0}}, {"medium", {10000, 0, 0}}}};
  CHECK(plan_corpus_run(200000, 400, 1, costs.measure()).size.name == "medium");
  CHECK(plan_corpus_run(200000, 399.99, 1, costs.measure()).size.name == "small");

  costs.asked.clear();
  const auto none = plan_corpus_run(kTatoeba, 0, 2, costs.measure());
  CHECK(costs.asked.empty());
  CHECK(none.size.name == "small");
  CHECK(none.epochs == 0);
  CHECK(none.why == "there is no time budget to size it for");

  // A thread count of 0 (none known) is one thread; a corpus without target tokens counts as
  // one, so the epochs are finite.
  const auto empty = plan_corpus_run(0, 100, 0, costs.measure());
  CHECK(empty.threads == 1);
  CHECK(empty.size.name == "small");
  CHECK(std::isfinite(empty.epochs));
  CHECK(empty.epochs == doctest::Approx(100.0 * 20000));
  // A size that measured no speed at all buys no epochs (and no division by zero).
  CHECK(training::epochs_in(100, 1000, {0, 1, 0}) == 0);
}
