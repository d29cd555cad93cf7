// The built-in variants beyond the chapter: RMSNorm, SwiGLU, relative positions (Hugging Face's
// relative_key / relative_key_query), ALiBi and rotary embeddings. Their values against PyTorch
// are in test_models_parity.cpp; here: gradcheck, cached decoding equal to uncached, the
// properties each scheme is built for, and their errors.
#include "generation/generation.hpp"
#include "helpers.hpp"
#include "models/models.hpp"

using namespace anatomy;
using namespace anatomy::generation;
using namespace anatomy::models;
using testing::check_error;

namespace {

TransformerConfig small(const std::string& set = "") {
  auto c = TransformerConfig::from_json(R"({
    "vocab_size": 30, "hidden_size": 16, "num_attention_heads": 4, "num_hidden_layers": 2,
    "intermediate_size": 32, "max_position_embeddings": 24, "target_vocab_size": 20,
    "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0})",
                                        "small");
  for (size_t at = 0; at < set.size();) {  // "a=1 b=2": one set() each
    const size_t end = std::min(set.find(' ', at), set.size());
    c.set(set.substr(at, end - at));
    at = end + 1;
  }
  c.validate();
  return c;
}

const std::vector<std::string> kSchemes = {"relative_key", "relative_key_query", "alibi", "rotary"};

}  // namespace

TEST_CASE("variants: gradcheck of RMSNorm, SwiGLU and attention with each position scheme") {
  manual_seed(0);
  nn::RMSNorm norm(6, 1e-6f);
  Tensor x = randn({2, 3, 6}).requires_grad_(), w = randn({6}).requires_grad_();
  auto r = gradcheck(
      [&](const std::vector<Tensor>& in) {
        norm.weight = in[1];
        return norm.forward(in[0]);
      },
      {x, w});
  CHECK_MESSAGE(r.ok, r.message);

  auto c = small("ffn_type=swiglu");
  c.intermediate_size = 8;
  SwiGLUFeedForward ffn(c);
  r = gradcheck([&](const std::vector<Tensor>& in) { return ffn.forward(in[0]); },
                {randn({1, 3, 16}).requires_grad_()});
  CHECK_MESSAGE(r.ok, r.message);

  for (const auto& scheme : kSchemes) {
    CAPTURE(scheme);
    auto config = small("position_embedding_type=" + scheme);
    auto attention = std::dynamic_pointer_cast<FusedMultiHeadAttention>(make_attention(config));
    REQUIRE(attention);
    REQUIRE(attention->positions);
    std::vector<Tensor> inputs = {(0.5f * randn({1, 4, 16})).requires_grad_()};
    auto relative = std::dynamic_pointer_cast<RelativePositions>(attention->positions);
    if (relative) inputs.push_back(relative->weight.detach().clone().requires_grad_());
    r = gradcheck(
        [&](const std::vector<Tensor>& in) {
          if (relative) relative->weight = in[1];
          return attention->forward(in[0], in[0], causal_mask(4));
        },
        inputs);
    CHECK_MESSAGE(r.ok, r.message);
  }
}

TEST_CASE("variants: cached decoding equals uncached for every scheme, norm and feed-forward") {
  for (const std::string set :
       {"position_embedding_type=relative_key", "position_embedding_type=relative_key_query",
        "position_embedding_type=alibi", "position_embedding_type=rotary", "norm_type=rms_norm",
        "ffn_type=swiglu"}) {
    CAPTURE(set);
    manual_seed(4);
    Seq2SeqTransformer s2s(small(set));
    init_weights(s2s, 0.3);  // large weights: outputs that differ by position, not near-uniform
    s2s.eval();
    const Tensor src = tensor({{5, 6, 7, 8, 9}, {3, 4, 0, 0, 0}});
    auto cached = greedy_decode(s2s, src, 1, 2, 10, {.output_scores = true});
    auto plain = greedy_decode(s2s, src, 1, 2, 10, {.use_cache = false, .output_scores = true});
    for (size_t b = 0; b < 2; ++b) {
      CHECK(cached[b].tokens == plain[b].tokens);
      REQUIRE(cached[b].logits.size() == plain[b].logits.size());
      for (size_t i = 0; i < cached[b].logits.size(); ++i)
        CHECK_CLOSE(cached[b].logits[i], plain[b].logits[i], 1e-5, 1e-4);
    }
    TransformerForCausalLM lm(small(set));
    init_weights(lm, 0.3);
    lm.eval();
    auto g1 = generate(lm, {3, 4, 5}, 12, {.temperature = 0.0f, .use_cache = true});
    auto g2 = generate(lm, {3, 4, 5}, 12, {.temperature = 0.0f, .use_cache = false});
    CHECK(g1.tokens == g2.tokens);
    for (size_t i = 0; i < g1.logits.size(); ++i)
      CHECK_CLOSE(g1.logits[i], g2.logits[i], 1e-5, 1e-4);
  }
}

TEST_CASE("relative positions: Hugging Face's parameter, distances, and no absolute positions") {
  manual_seed(1);
  auto c = small("position_embedding_type=relative_key");
  TransformerEncoder encoder(c);
  const auto params = encoder.named_parameters();
  std::map<std::string, Shape> shapes;
  for (const auto& [name, p] : params) shapes[name] = p.shape();
  // nn.Embedding(2 * max_position_embeddings - 1, head_dim), held by the attention module.
  REQUIRE(shapes.count("layers.0.attention.distance_embedding.weight"));
  CHECK(shapes.at("layers.0.attention.distance_embedding.weight") == Shape{47, 4});
  CHECK_FALSE(shapes.count("embeddings.position_embeddings.weight"));
  // Row (i - j) + max - 1: the query at 2 and the key at 0 use row 25, the reverse row 21.
  RelativePositions r(c, false);
  Tensor d = r.distance_vectors(0, 3, 3);
  CHECK_CLOSE(d.select(0, 2).select(0, 0), r.weight.select(0, 25), 0, 0);
  CHECK_CLOSE(d.select(0, 0).select(0, 2), r.weight.select(0, 21), 0, 0);
  // With a cache the query sits after the cached keys.
  CHECK_CLOSE(r.distance_vectors(5, 1, 6).select(0, 0).select(0, 0), r.weight.select(0, 28), 0, 0);
  check_error([&] { r.distance_vectors(20, 5, 25); },
              {"RelativePositions", "max_position_embeddings = 24"});
  // Either side alone past the table: queries up to position 25, or 25 keys.
  check_error([&] { r.distance_vectors(20, 5, 3); }, {"positions up to 25 and 3 keys"});
  check_error([&] { r.distance_vectors(0, 1, 25); }, {"positions up to 1 and 25 keys"});
  CHECK(r.distance_vectors(20, 4, 24).shape() == Shape{4, 24, 4});  // both at the limit
  // Shifting a whole sequence changes nothing that only relative positions see: the bias of
  // queries at 3.. against keys 3.. equals that of queries at 0.. against keys 0...
  Tensor q = randn({1, 4, 3, 4}), k = randn({1, 4, 6, 4});
  Tensor shifted = r.bias(q, k, 3).narrow(3, 3, 3);
  CHECK_CLOSE(shifted, r.bias(q, k.narrow(2, 3, 3), 0), 1e-6, 1e-6);
}

TEST_CASE("ALiBi: the paper's head slopes and a bias that only sees distance") {
  const auto eight = ALiBi::head_slopes(8);
  REQUIRE(eight.size() == 8);
  for (int h = 0; h < 8; ++h) CHECK(eight[h] == doctest::Approx(std::pow(2.0, -(h + 1))));
  // Not a power of 2: the 2 slopes of 2 heads, then every other slope of 4 heads.
  const auto three = ALiBi::head_slopes(3);
  REQUIRE(three.size() == 3);
  CHECK(three[0] == doctest::Approx(0.0625));
  CHECK(three[1] == doctest::Approx(0.00390625));
  CHECK(three[2] == doctest::Approx(0.25));
  ALiBi alibi(small("position_embedding_type=alibi"));
  Tensor b = alibi.bias(randn({1, 4, 3, 4}), randn({1, 4, 5, 4}), 2);
  CHECK(b.shape() == Shape{1, 4, 3, 5});
  // Head 0 (slope 1/4): the query at position 2 + 1 = 3 and the key at 0 are 3 apart.
  CHECK(b.select(1, 0).select(1, 1).select(1, 0).item() == doctest::Approx(-0.75));
  CHECK(b.select(1, 3).select(1, 0).select(1, 2).item() == 0.0f);
}

TEST_CASE("rotary: lengths are kept and q·k depends only on the distance") {
  manual_seed(2);
  RotaryPositions rope(small("position_embedding_type=rotary"));
  Tensor q = randn({1, 1, 1, 4}), k = randn({1, 1, 1, 4});
  CHECK_CLOSE(rope.encode(q, 0), q, 0, 0);  // position 0 turns by 0
  CHECK_CLOSE(rope.encode(q, 7).pow(2.0f).sum(), q.pow(2.0f).sum(), 1e-5, 1e-5);
  auto dot = [&](int64_t i, int64_t j) {
    return (rope.encode(q, i) * rope.encode(k, j)).sum().item();
  };
  CHECK(dot(5, 2) == doctest::Approx(dot(13, 10)).epsilon(1e-4));
  CHECK(dot(5, 2) != doctest::Approx(dot(5, 3)).epsilon(1e-3));
  // The GPT-NeoX pairing: dimension d turns with d + D/2, by position · theta^(-2d/D).
  Tensor e0 = tensor({{{{1.0f, 0.0f, 0.0f, 0.0f}}}});
  const auto turned = rope.encode(e0, 3).to_vector();
  CHECK(turned[0] == doctest::Approx(std::cos(3.0)));
  CHECK(turned[2] == doctest::Approx(std::sin(3.0)));
  CHECK(turned[1] == 0.0f);
  // Vectors of another size than the head's (even or odd) are refused by name.
  check_error([&] { rope.encode(randn({1, 1, 1, 6}), 0); }, {"even head size 4", "of 6"});
  check_error([&] { rope.encode(randn({1, 1, 1, 3}), 0); }, {"even head size 4", "of 3"});
}

TEST_CASE("variants: configs that cannot work are refused by name") {
  check_error([] { small("position_embedding_type=rotary num_attention_heads=16"); },
              {"rotary", "even head size", "= 1"});
  auto c = small("position_embedding_type=alibi");
  c.attention_type = "book";
  check_error([&] { TransformerEncoder e(c); }, {"book", "alibi", "fused"});
  check_error([] { nn::RMSNorm(4).forward(randn({2, 3})); }, {"RMSNorm", "[..., 4]", "[2, 3]"});
  check_error([] { small("rope_theta=0"); }, {"rope_theta"});
}

// RMSNorm over a single vector [E] (as PyTorch's norms accept it) equals the same row in a batch.
TEST_CASE("RMSNorm normalizes a 1-D input as a row of a batch") {
  manual_seed(12);
  nn::RMSNorm norm(4);
  norm.weight = norm.weight * 0.0f + tensor({0.5f, 1.0f, 1.5f, 2.0f});
  Tensor x = randn({4});
  CHECK_CLOSE(norm.forward(x), norm.forward(x.unsqueeze(0)).squeeze(0), 0, 0);
  const float rms = std::sqrt((x * x).mean().item() + norm.eps);
  CHECK_CLOSE(norm.forward(x), x / rms * tensor({0.5f, 1.0f, 1.5f, 2.0f}), 1e-6, 1e-6);
  check_error([&] { norm.forward(full({}, 1.0f)); }, {"RMSNorm", "expected input [..., 4]"});
}
