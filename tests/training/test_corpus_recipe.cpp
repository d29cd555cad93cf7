// The size a corpus run chooses for its data and its time budget.
#include "helpers.hpp"
#include "models/config.hpp"
#include "training/corpus_recipe.hpp"

using namespace anatomy;
using training::choose_corpus_size;

TEST_CASE("corpus size: the largest the budget buys 20 epochs of, on a corpus large enough") {
  const auto& sizes = training::corpus_sizes();
  REQUIRE(sizes.size() == 2);
  CHECK(sizes[0].name == "small");
  CHECK(sizes[1].name == "medium");
  // Tatoeba eng-deu's 323,208 target tokens: 15 minutes on one core buy the small model about 36
  // epochs and the medium one 15, so small; two cores buy medium 30.
  const int64_t tatoeba = 323208;
  const auto one = choose_corpus_size(tatoeba, 900, 1);
  CHECK(one.size.name == "small");
  CHECK_MESSAGE(one.why.find("about 36 epochs") != std::string::npos, one.why);
  const auto two = choose_corpus_size(tatoeba, 900, 2);
  CHECK(two.size.name == "medium");
  CHECK_MESSAGE(two.why.find("about 30 epochs") != std::string::npos, two.why);
  CHECK(models::TransformerConfig::preset(two.size.name).hidden_size == 256);
  // A thread count of 0 (none known) counts as one core, not as none: 36 epochs, not 0.
  CHECK_MESSAGE(
      choose_corpus_size(tatoeba, 900, 0).why.find("about 36 epochs") != std::string::npos,
      choose_corpus_size(tatoeba, 900, 0).why);
  // The boundary: medium at exactly 20 epochs, not just below.
  const double seconds_for_20 = 20.0 * tatoeba / sizes[1].tokens_per_second;
  CHECK(choose_corpus_size(tatoeba, seconds_for_20 * 1.001, 1).size.name == "medium");
  CHECK(choose_corpus_size(tatoeba, seconds_for_20 * 0.999, 1).size.name == "small");
  // Exactly 20 epochs count as 20 in the reason too: 100 s of the small model on a corpus that
  // takes it 5 s an epoch (too small for medium).
  const int64_t five_seconds = static_cast<int64_t>(5 * sizes[0].tokens_per_second);
  REQUIRE(five_seconds < sizes[1].min_corpus_tokens);
  const auto exact = choose_corpus_size(five_seconds, 100, 1);
  CHECK(exact.size.name == "small");
  CHECK_MESSAGE(exact.why.find("about 20 epochs of 64000 target tokens (the largest size that "
                               "gets 20)") != std::string::npos,
                exact.why);
  // A corpus ten times larger gets the small model from the same 15 minutes on two cores, and
  // says that even it gets fewer than 20 epochs.
  const auto big = choose_corpus_size(10 * tatoeba, 900, 2);
  CHECK(big.size.name == "small");
  CHECK_MESSAGE(big.why.find("(the smallest size)") != std::string::npos, big.why);
  // A corpus under medium's minimum stays small whatever the budget.
  const auto tiny = choose_corpus_size(sizes[1].min_corpus_tokens - 1, 1e6, 2);
  CHECK(tiny.size.name == "small");
  CHECK(choose_corpus_size(sizes[1].min_corpus_tokens, 1e6, 2).size.name == "medium");
  // Without a budget there is nothing to size for: the smallest.
  const auto none = choose_corpus_size(tatoeba, 0, 2);
  CHECK(none.size.name == "small");
  CHECK(none.why == "there is no time budget to size it for");
  // A corpus with no target tokens counts as one: a finite number of epochs, never "inf".
  const auto empty = choose_corpus_size(0, 900, 1);
  CHECK(empty.size.name == "small");
  const double per_second = sizes[0].tokens_per_second;
  CHECK_MESSAGE(empty.why.find(fmt::format("about {:.0f} epochs of 0 target tokens",
                                           900 * per_second)) != std::string::npos,
                empty.why);
}
