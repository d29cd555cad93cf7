// The chapter's components and models against PyTorch code written the book's way
// (export/pytorch/model.py): outputs, input gradients and every parameter's gradient,
// with the PyTorch modules' weights loaded by name. Each case runs twice: with the book's
// per-head MultiHeadAttention, and with the fused one after converting the weights.
#include "checkpoints/checkpoints.hpp"
#include "helpers.hpp"
#include "models/models.hpp"

using namespace anatomy;
using namespace anatomy::checkpoints;
using namespace anatomy::models;
using Inputs = std::vector<Tensor>;

namespace {

const std::map<std::string, Tensor>& golden() {
  static const auto g =
      load_safetensors(testing::test_path("parity/golden/models.safetensors")).tensors;
  return g;
}

TransformerConfig small(bool fused) {
  // make_golden_models.py's config.
  auto c = TransformerConfig::from_json(R"({
    "vocab_size": 50, "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2,
    "intermediate_size": 64, "max_position_embeddings": 16, "layer_norm_eps": 1e-12,
    "num_labels": 3})",
                                        "make_golden_models.py's config");
  c.attention_type = fused ? "fused" : "book";
  return c;
}

struct Case {
  std::string name;
  std::function<void(TransformerConfig&)> configure;
  std::function<std::shared_ptr<nn::Module>(const TransformerConfig&)> make;
  std::function<Tensor(nn::Module&, const Inputs&)> call;
  bool book_only = false;   // AttentionHead has no fused twin
  bool fused_only = false;  // position schemes inside attention need the fused module
};

template <typename M>
M& as(nn::Module& m) {
  return dynamic_cast<M&>(m);
}

const std::vector<Case> kBookCases = {
    {"attention_head", [](auto&) {},
     [](const auto&) { return std::make_shared<AttentionHead>(32, 8); },
     [](nn::Module& m, const Inputs& x) { return as<AttentionHead>(m).forward(x[0], x[0]); }, true},
    {"mha_self", [](auto&) {}, [](const auto& c) { return make_attention(c); },
     [](nn::Module& m, const Inputs& x) { return as<Attention>(m).forward(x[0], x[0], x[1]); }},
    {"mha_cross", [](auto&) {}, [](const auto& c) { return make_attention(c); },
     [](nn::Module& m, const Inputs& x) { return as<Attention>(m).forward(x[0], x[1], x[2]); }},
    {"feed_forward", [](auto&) {}, [](const auto& c) { return std::make_shared<FeedForward>(c); },
     [](nn::Module& m, const Inputs& x) { return m.forward(x[0]); }},
    {"embeddings", [](auto&) {}, [](const auto& c) { return std::make_shared<Embeddings>(c); },
     [](nn::Module& m, const Inputs& x) { return m.forward(x[0]); }},
    {"embeddings_sinusoidal", [](auto& c) { c.position_embedding_type = "sinusoidal"; },
     [](const auto& c) { return std::make_shared<Embeddings>(c); },
     [](nn::Module& m, const Inputs& x) { return m.forward(x[0]); }},
    {"encoder_layer_pre", [](auto&) {},
     [](const auto& c) { return std::make_shared<TransformerEncoderLayer>(c); },
     [](nn::Module& m, const Inputs& x) {
       return as<TransformerEncoderLayer>(m).forward(x[0], x[1]);
     }},
    {"encoder_layer_post", [](auto& c) { c.pre_layer_norm = false; },
     [](const auto& c) { return std::make_shared<TransformerEncoderLayer>(c); },
     [](nn::Module& m, const Inputs& x) {
       return as<TransformerEncoderLayer>(m).forward(x[0], x[1]);
     }},
    {"encoder", [](auto&) {}, [](const auto& c) { return std::make_shared<TransformerEncoder>(c); },
     [](nn::Module& m, const Inputs& x) { return as<TransformerEncoder>(m).forward(x[0], x[1]); }},
    {"encoder_final_norm", [](auto& c) { c.final_layer_norm = true; },
     [](const auto& c) { return std::make_shared<TransformerEncoder>(c); },
     [](nn::Module& m, const Inputs& x) { return as<TransformerEncoder>(m).forward(x[0], x[1]); }},
    {"classifier", [](auto&) {},
     [](const auto& c) { return std::make_shared<TransformerForSequenceClassification>(c); },
     [](nn::Module& m, const Inputs& x) {
       return as<TransformerForSequenceClassification>(m).forward(x[0], x[1]);
     }},
    {"decoder_layer_pre", [](auto&) {},
     [](const auto& c) { return std::make_shared<TransformerDecoderLayer>(c, true); },
     [](nn::Module& m, const Inputs& x) {
       return as<TransformerDecoderLayer>(m).forward(x[0], x[1], x[2], x[3]);
     }},
    {"decoder_layer_post", [](auto& c) { c.pre_layer_norm = false; },
     [](const auto& c) { return std::make_shared<TransformerDecoderLayer>(c, true); },
     [](nn::Module& m, const Inputs& x) {
       return as<TransformerDecoderLayer>(m).forward(x[0], x[1], x[2], x[3]);
     }},
    {"causal_lm",
     [](auto& c) {
       c.tie_word_embeddings = true;
       c.final_layer_norm = true;
     },
     [](const auto& c) { return std::make_shared<TransformerForCausalLM>(c); },
     [](nn::Module& m, const Inputs& x) { return m.forward(x[0]); }},
    {"seq2seq", [](auto& c) { c.target_vocab_size = 40; },
     [](const auto& c) { return std::make_shared<Seq2SeqTransformer>(c); },
     [](nn::Module& m, const Inputs& x) { return as<Seq2SeqTransformer>(m).forward(x[0], x[1]); }},
    {"seq2seq_post_sinusoidal",
     [](auto& c) {
       c.target_vocab_size = 40;
       c.pre_layer_norm = false;
       c.position_embedding_type = "sinusoidal";
     },
     [](const auto& c) { return std::make_shared<Seq2SeqTransformer>(c); },
     [](nn::Module& m, const Inputs& x) { return as<Seq2SeqTransformer>(m).forward(x[0], x[1]); }},
    {"causal_lm_gpt",
     [](auto& c) {
       c.tie_word_embeddings = true;
       c.final_layer_norm = true;
       c.embedding_layer_norm = false;
       c.bias = false;
     },
     [](const auto& c) { return std::make_shared<TransformerForCausalLM>(c); },
     [](nn::Module& m, const Inputs& x) { return m.forward(x[0]); }},
};

// The built-in variants (make_golden_models.py's `variants`), each in an encoder layer, a decoder
// layer and whole models, and the attention module itself for the position schemes.
std::vector<Case> variant_cases() {
  struct Variant {
    std::string name, set;
    bool in_attention;
  };
  const std::vector<Variant> variants = {
      {"rms_norm", "norm_type=rms_norm layer_norm_eps=1e-6", false},
      {"swiglu", "ffn_type=swiglu", false},
      {"relative_key", "position_embedding_type=relative_key", true},
      {"relative_key_query", "position_embedding_type=relative_key_query", true},
      {"alibi", "position_embedding_type=alibi", true},
      {"rotary", "position_embedding_type=rotary", true},
      {"alibi_3_heads", "position_embedding_type=alibi num_attention_heads=3 hidden_size=24", true},
  };
  std::vector<Case> cases;
  for (const auto& v : variants) {
    auto with = [set = v.set](std::function<void(TransformerConfig&)> more) {
      return [set, more](TransformerConfig& c) {
        for (size_t at = 0; at < set.size();) {  // "a=1 b=2": one --set each
          const size_t end = std::min(set.find(' ', at), set.size());
          c.set(set.substr(at, end - at));
          at = end + 1;
        }
        more(c);
      };
    };
    auto none = [](TransformerConfig&) {};
    if (v.in_attention)
      cases.push_back({v.name + ".mha_self", with(none),
                       [](const auto& c) { return make_attention(c); },
                       [](nn::Module& m, const Inputs& x) {
                         return as<Attention>(m).forward(x[0], x[0], x[1]);
                       },
                       false, true});
    if (v.name == "alibi_3_heads") continue;
    cases.push_back({v.name + ".encoder_layer", with(none),
                     [](const auto& c) { return std::make_shared<TransformerEncoderLayer>(c); },
                     [](nn::Module& m, const Inputs& x) {
                       return as<TransformerEncoderLayer>(m).forward(x[0], x[1]);
                     },
                     false, v.in_attention});
    cases.push_back(
        {v.name + ".decoder_layer", with(none),
         [](const auto& c) { return std::make_shared<TransformerDecoderLayer>(c, true); },
         [](nn::Module& m, const Inputs& x) {
           return as<TransformerDecoderLayer>(m).forward(x[0], x[1], x[2], x[3]);
         },
         false, v.in_attention});
    cases.push_back({v.name + ".causal_lm", with([](auto& c) { c.final_layer_norm = true; }),
                     [](const auto& c) { return std::make_shared<TransformerForCausalLM>(c); },
                     [](nn::Module& m, const Inputs& x) { return m.forward(x[0]); }, false,
                     v.in_attention});
    if (v.name == "relative_key_query")
      cases.push_back({v.name + ".seq2seq", with([](auto& c) { c.target_vocab_size = 40; }),
                       [](const auto& c) { return std::make_shared<Seq2SeqTransformer>(c); },
                       [](nn::Module& m, const Inputs& x) {
                         return as<Seq2SeqTransformer>(m).forward(x[0], x[1]);
                       },
                       false, true});
  }
  return cases;
}

void check_against_golden(const std::vector<Case>& cases) {
  const auto& g = golden();
  for (const auto& c : cases) {
    for (bool fused : {false, true}) {
      if ((fused && c.book_only) || (!fused && c.fused_only)) continue;
      const std::string label = c.name + (fused ? " (fused)" : " (book)");
      SUBCASE(label.c_str()) {
        const std::string n = c.name;
        TransformerConfig config = small(fused);
        c.configure(config);
        auto m = c.make(config);
        nn::StateDict state = testing::with_prefix(g, n + ".param.");
        if (fused) state = to_fused_layout(state, config.num_attention_heads);
        m->load_state_dict(state);
        m->eval();
        Inputs in;
        for (int i = 0; g.count(n + ".in" + std::to_string(i)); ++i) {
          Tensor x = g.at(n + ".in" + std::to_string(i)).clone();
          if (g.count(n + ".grad" + std::to_string(i))) x.requires_grad_();
          in.push_back(x);
        }
        Tensor y = c.call(*m, in);
        REQUIRE_MESSAGE(g.count(n + ".out"), "no golden values for ", n, ": make golden");
        CHECK_CLOSE(y, g.at(n + ".out"), 1e-4, 1e-4);
        sum(y * g.at(n + ".grad_out")).backward();
        for (size_t i = 0; i < in.size(); ++i)
          if (g.count(n + ".grad" + std::to_string(i)))
            CHECK_CLOSE(in[i].grad(), g.at(n + ".grad" + std::to_string(i)), 1e-4, 1e-4);
        nn::StateDict grads;
        for (const auto& [pn, p] : m->named_parameters())
          if (p.grad().defined()) grads[pn] = p.grad();
        if (fused) grads = to_book_layout(grads, config.num_attention_heads);
        size_t expected = 0;
        for (const auto& [k, t] : g)
          if (k.starts_with(n + ".pgrad.")) {
            ++expected;
            const std::string pn = k.substr(n.size() + 7);
            INFO("parameter ", pn);
            REQUIRE(grads.count(pn));
            CHECK_CLOSE(grads.at(pn), t, 1e-4, 1e-4);
          }
        CHECK(grads.size() == expected);
        CHECK(expected > 0);
      }
    }
  }
}

}  // namespace

TEST_CASE("models parity: every component and model matches the book-style PyTorch code") {
  check_against_golden(kBookCases);
}

TEST_CASE("variants parity: RMSNorm, SwiGLU, relative, ALiBi and rotary match PyTorch") {
  check_against_golden(variant_cases());
}
