// A whole training loop against PyTorch (tests/parity/make_golden_train.py): the GPT-layout
// language model `anatomy train --task lm` builds, trained for 40 steps with AdamW (decay on
// matrices only), warmup + cosine schedule and gradient clipping, from PyTorch's initial weights
// on PyTorch's batches. Every step's loss and gradient norm and the final weights must agree.
#include "checkpoints/checkpoints.hpp"
#include "helpers.hpp"
#include "models/models.hpp"

using namespace anatomy;
using namespace anatomy::checkpoints;
using namespace anatomy::models;

using testing::with_prefix;

TEST_CASE("training parity: 40 AdamW steps of a GPT-layout LM equal PyTorch's") {
  const auto g = load_safetensors(testing::test_path("parity/golden/train.safetensors")).tensors;
  const Tensor batches = g.at("batches"), losses = g.at("losses"), norms = g.at("grad_norms"),
               lrs = g.at("lrs");
  const int64_t steps = batches.size(0), T = batches.size(2) - 1;
  for (bool fused : {false, true}) {
    SUBCASE(fused ? "fused attention" : "the book's attention") {
      // nanoGPT's layout (the nanogpt preset) at the size of make_golden_train.py's model.
      auto c = TransformerConfig::from_json(R"({
        "vocab_size": 20, "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2,
        "intermediate_size": 64, "max_position_embeddings": 16, "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0, "layer_norm_eps": 1e-5, "tie_word_embeddings": true,
        "final_layer_norm": true, "embedding_layer_norm": false, "bias": false})",
                                            "make_golden_train.py's config");
      c.attention_type = fused ? "fused" : "book";
      TransformerForCausalLM model(c);
      nn::StateDict init = with_prefix(g, "init.");
      model.load_state_dict(fused ? to_fused_layout(init, 4) : init);
      nn::AdamW opt(model.parameters(),
                    {.lr = 3e-3, .beta1 = 0.9, .beta2 = 0.99, .weight_decay = 0.1});
      opt.no_decay_for_vectors();
      nn::WarmupDecaySchedule schedule(opt, 3e-3, 5, steps, nn::WarmupDecaySchedule::Decay::Cosine,
                                       3e-4);
      model.train();
      for (int64_t s = 0; s < steps; ++s) {
        INFO("step ", s);
        CHECK(opt.lr() == doctest::Approx(lrs.select(0, s).item<double>()).epsilon(1e-6));
        const Tensor b = batches.select(0, s);
        const Tensor x = b.narrow(1, 0, T).contiguous(), y = b.narrow(1, 1, T).contiguous();
        Tensor logits = model.forward(x);
        Tensor loss = cross_entropy(logits.reshape({-1, c.vocab_size}), y.reshape({-1}));
        opt.zero_grad();
        loss.backward();
        const float norm = nn::clip_grad_norm_(model.parameters(), 1.0f);
        opt.step();
        schedule.step();
        CHECK(loss.item<double>() ==
              doctest::Approx(losses.select(0, s).item<double>()).epsilon(2e-4));
        CHECK(norm == doctest::Approx(norms.select(0, s).item<double>()).epsilon(2e-3));
      }
      nn::StateDict final_state = model.state_dict();
      if (fused) final_state = to_book_layout(final_state, 4);
      for (const auto& [k, t] : with_prefix(g, "final.")) {
        const std::string parameter = k;  // (INFO cannot name a structured binding in clang 14)
        INFO("parameter ", parameter);
        REQUIRE(final_state.count(k));
        CHECK_CLOSE(final_state.at(k), t, 1e-4, 1e-3);
      }
    }
  }
}
