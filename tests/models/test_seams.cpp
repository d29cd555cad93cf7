// The seams a student extends through: attention's additive bias (against PyTorch's float
// attn_mask), parts chosen by registered name, the config declared once, Module::apply and
// init_weights by module type, layers built from parts passed in.
#include <map>

#include "helpers.hpp"
#include "models/models.hpp"

using namespace anatomy;
using namespace anatomy::models;
using testing::check_error;

namespace {

const std::map<std::string, Tensor>& golden() {
  static const auto g =
      load_safetensors(testing::test_path("parity/golden/attention_bias.safetensors")).tensors;
  return g;
}

TransformerConfig small() {
  TransformerConfig c = TransformerConfig::preset("tiny");
  c.vocab_size = 30;
  c.max_position_embeddings = 16;
  return c;
}

// A norm that does nothing but count its calls: a part a student might register.
struct CountingNorm : nn::Module {
  int calls = 0;
  Tensor scale;
  explicit CountingNorm(const TransformerConfig& c) {
    scale = register_parameter("scale", full({c.hidden_size}, 3.0f));
  }
  Tensor forward(const Tensor& x) override {
    ++calls;
    return x * scale;
  }
};

// Registered when the test program starts, as a student's part would be: every test case (each
// runs in its own process under ctest) can use it.
const bool counting_norm_registered = norms().add(
    "counting_norm", [](const TransformerConfig& c) { return std::make_shared<CountingNorm>(c); });

}  // namespace

TEST_CASE("attention bias: outputs and gradients equal PyTorch's float attn_mask") {
  const auto& g = golden();
  for (const std::string name : {"bias", "bias_mask"}) {
    CAPTURE(name);
    Tensor q = g.at("q").clone().requires_grad_(), k = g.at("k").clone().requires_grad_(),
           v = g.at("v").clone().requires_grad_(), bias = g.at("bias").clone().requires_grad_();
    AttentionOptions o{.bias = bias};
    if (name == "bias_mask") o.mask = g.at("mask");
    Tensor out = scaled_dot_product_attention(q, k, v, o).output;
    (out * g.at("weights")).sum().backward();
    CHECK_CLOSE(out, g.at(name + ".out"), 1e-5, 1e-4);
    CHECK_CLOSE(q.grad(), g.at(name + ".grad_q"), 1e-5, 1e-4);
    CHECK_CLOSE(k.grad(), g.at(name + ".grad_k"), 1e-5, 1e-4);
    CHECK_CLOSE(v.grad(), g.at(name + ".grad_v"), 1e-5, 1e-4);
    CHECK_CLOSE(bias.grad(), g.at(name + ".grad_bias"), 1e-5, 1e-4);
  }
}

TEST_CASE("attention bias: -inf hides keys like the 0/1 mask, a fully hidden row gets zeros") {
  manual_seed(3);
  Tensor q = randn({1, 2, 3, 4}), k = randn({1, 2, 5, 4}), v = randn({1, 2, 5, 4});
  Tensor mask = tensor({{1.0f, 1.0f, 0.0f, 1.0f, 0.0f}});
  Tensor bias = where(eq(mask, 0.0f), full({}, -INFINITY), full({}, 0.0f));
  auto by_mask = scaled_dot_product_attention(q, k, v, mask);
  auto by_bias = scaled_dot_product_attention(q, k, v, AttentionOptions{.bias = bias});
  CHECK_CLOSE(by_bias.weights, by_mask.weights, 1e-7, 0);
  CHECK_CLOSE(by_bias.output, by_mask.output, 1e-7, 0);
  auto dead = scaled_dot_product_attention(q, k, v, AttentionOptions{.bias = full({5}, -INFINITY)});
  CHECK(amax(abs(dead.weights)).item() == 0.0f);
  CHECK(amax(abs(dead.output)).item() == 0.0f);
  check_error(
      [&] {
        scaled_dot_product_attention(q, k, v, AttentionOptions{.bias = randn({4, 4})});
      },
      {"bias", "does not broadcast", "[4, 4]"});
}

TEST_CASE("registry: a registered norm is built by name everywhere, unknown names are errors") {
  CHECK(counting_norm_registered);
  check_error([] { norms().add("counting_norm", nullptr); }, {"norm_type", "registered already"});
  TransformerConfig c = small();
  c.set("norm_type=counting_norm");
  c.validate();
  TransformerEncoder encoder(c);
  auto layer = encoder.layers->at<TransformerEncoderLayer>(0);
  auto& norm = dynamic_cast<CountingNorm&>(*layer->layer_norm_1);
  encoder.forward(tensor({{1, 2, 3}}));
  CHECK(norm.calls == 1);
  CHECK(dynamic_cast<CountingNorm*>(encoder.embeddings->layer_norm.get()));  // every norm
  bool named = false;
  for (const auto& [name, p] : encoder.named_parameters())
    named = named || name == "layers.0.layer_norm_1.scale";
  CHECK(named);
  // From config.json too, and an unknown name lists what is registered.
  auto j = TransformerConfig::from_json(R"({"norm_type": "counting_norm"})", "c.json");
  CHECK(j.norm_type == "counting_norm");
  check_error([] { TransformerConfig::from_json(R"({"norm_type": "rms_nrom"})", "c.json"); },
              {"norm_type", "layer_norm", "rms_nrom", "c.json"});
  check_error([] { TransformerConfig::from_json(R"({"attention_type": "flash"})", "c.json"); },
              {"attention_type", "book", "fused"});
  check_error(
      [] { TransformerConfig::from_json(R"({"position_embedding_type": "rotray"})", "c.json"); },
      {"position_embedding_type", "absolute", "alibi", "relative_key", "rotary", "sinusoidal"});
}

TEST_CASE("config: one declaration per field drives json, set() and checks") {
  TransformerConfig c = small();
  c.set("hidden_size=96");
  c.set("hidden_dropout_prob=0.25");
  c.set("pre_layer_norm=false");
  c.set("hidden_act=relu");
  CHECK(c.hidden_size == 96);
  CHECK(c.hidden_dropout_prob == 0.25);
  CHECK_FALSE(c.pre_layer_norm);
  CHECK(c.hidden_act == "relu");
  c.validate();  // relu is one of the three activations (and it is not refused)
  c.set("hidden_act=swish");
  check_error([&] { c.validate(); }, {"hidden_act", "must be gelu, gelu_new or relu", "swish"});
  c.set("hidden_act=relu");
  check_error([&] { c.set("hiden_size=3"); }, {"unknown config field", "hiden_size"});
  check_error([&] { c.set("hidden_size=big"); }, {"hidden_size", "must be an integer", "big"});
  check_error([&] { c.set("pre_layer_norm=1"); }, {"pre_layer_norm", "true or false"});
  check_error([&] { c.set("hidden_size"); }, {"name=value"});
  c.set("hidden_dropout_prob=1.5");
  check_error([&] { c.validate(); }, {"hidden_dropout_prob", "[0, 1)", "1.5"});
  // Every field survives to_json -> from_json, and to_json writes each one.
  TransformerConfig d = TransformerConfig::preset("nanogpt");
  d.vocab_size = 65;
  d.attention_type = "book";
  const auto back = TransformerConfig::from_json(d.to_json(), "roundtrip");
  CHECK(back.to_json() == d.to_json());
  CHECK(back.attention_type == "book");
  const std::string json = d.to_json();  // "{", one line per field, "}"
  CHECK(TransformerConfig::describe().size() ==
        static_cast<size_t>(std::count(json.begin(), json.end(), '\n') - 2));
  // Configs written before attention_type existed still load.
  CHECK(TransformerConfig::from_json(R"({"fused_attention": false})", "old.json").attention_type ==
        "book");
  // Presets: nanoGPT's Shakespeare model, and the book's BERT sizes.
  const auto n = TransformerConfig::preset("nanogpt");
  CHECK((n.hidden_size == 128 && n.num_attention_heads == 4 && n.num_hidden_layers == 4 &&
         n.max_position_embeddings == 64 && !n.bias && !n.embedding_layer_norm &&
         n.tie_word_embeddings));
  CHECK(TransformerConfig::preset("bert-base").to_json() == TransformerConfig().to_json());
  // The sizes `anatomy config --preset NAME` prints: hidden, heads, layers, feed-forward.
  for (const auto& preset :
       std::map<std::string, std::vector<int64_t>>{{"tiny", {64, 4, 2, 256}},
                                                   {"small", {128, 4, 2, 512}},
                                                   {"medium", {256, 4, 2, 1024}},
                                                   {"base", {256, 8, 3, 1024}},
                                                   {"nanogpt", {128, 4, 4, 512}},
                                                   {"gpt-small", {192, 6, 6, 768}},
                                                   {"bert-base", {768, 12, 12, 3072}}}) {
    const std::string& name = preset.first;  // not a structured binding: CAPTURE needs a variable
    CAPTURE(name);
    const auto p = TransformerConfig::preset(name);
    CHECK(std::vector<int64_t>{p.hidden_size, p.num_attention_heads, p.num_hidden_layers,
                               p.intermediate_size} == preset.second);
  }
  check_error([] { TransformerConfig::preset("huge"); }, {"unknown preset 'huge'", "tiny"});
}

TEST_CASE("Module::apply visits every module, children before their parent") {
  TransformerEncoderLayer layer(small());
  std::vector<std::string> order;
  layer.apply([&](nn::Module& m) { order.push_back(m.type_name()); });
  REQUIRE(!order.empty());
  CHECK(order.back() == "TransformerEncoderLayer");
  CHECK(order.front() == "LayerNorm");  // layer_norm_1, the first child, has no children
  const auto count = [&](const std::string& t) {
    return std::count(order.begin(), order.end(), t);
  };
  CHECK(count("LayerNorm") == 2);
  CHECK(count("Linear") == 4);  // qkv, output_linear, linear_1, linear_2
  CHECK(count("Dropout") == 2);
}

TEST_CASE("init_weights dispatches on module type, parts of your own keep their init") {
  TransformerConfig c = small();
  c.set("norm_type=counting_norm");
  c.tie_word_embeddings = true;
  c.num_hidden_layers = 4;
  manual_seed(0);
  TransformerForCausalLM model(c);
  init_weights(model, 0.02, c.num_hidden_layers);
  auto& layer = *model.decoder->layers->at<TransformerDecoderLayer>(0);
  // A registered norm's parameter is left as its constructor made it.
  CHECK(amin(dynamic_cast<CountingNorm&>(*layer.layer_norm_1).scale).item() == 3.0f);
  auto std_of = [](const Tensor& t) { return std::sqrt(var(t.reshape({-1})).item()); };
  auto& attention = dynamic_cast<FusedMultiHeadAttention&>(*layer.self_attention);
  // N(0, 0.02) for ordinary Linear weights, 0.02 / √(2·4) = 0.0071 for the residual writers.
  CHECK(std_of(attention.qkv->weight) == doctest::Approx(0.02).epsilon(0.05));
  CHECK(std_of(attention.output_linear->weight) ==
        doctest::Approx(0.02 / std::sqrt(8.0)).epsilon(0.1));
  CHECK(amax(abs(attention.qkv->bias)).item() == 0.0f);
  // The tied table: one tensor, initialized once as N(0, 0.02).
  CHECK(model.lm_head->weight.impl() == model.decoder->embeddings->token_embeddings->weight.impl());
  CHECK(std_of(model.lm_head->weight) == doctest::Approx(0.02).epsilon(0.1));
  // An Embedding's padding row stays zero.
  nn::Embedding padded(10, 8, 0);
  init_weights(padded);
  CHECK(amax(abs(padded.weight.select(0, 0))).item() == 0.0f);
  CHECK(amax(abs(padded.weight.select(0, 1))).item() > 0.0f);
}

// Every parameter after init_weights, by what its name says it is: the Linear layers that write
// into the residual stream (attention's output_linear, self- and cross-attention alike, and the
// feed-forward's linear_2) at std / √(2·layers), every other weight and every position table at
// std, biases zero, norms one. A writer or a table the init missed keeps its constructor's
// values, which these stds tell apart.
TEST_CASE(
    "init_weights: every residual projection and position table of a seq2seq model and a "
    "language model") {
  auto std_of = [](const Tensor& t) { return std::sqrt(var(t.reshape({-1})).item()); };
  auto check_all = [&](nn::Module& model, int64_t layers) {
    init_weights(model, 0.02, layers);
    const double residual = 0.02 / std::sqrt(2.0 * static_cast<double>(layers));
    int64_t writers = 0, tables = 0;
    for (const auto& entry : model.named_parameters()) {
      const std::string& name = entry.first;
      const Tensor& t = entry.second;
      CAPTURE(name);
      const bool bias = name.ends_with(".bias");
      const bool norm = name.find("norm") != std::string::npos;
      if (norm && !bias) {
        CHECK(amin(t).item() == 1.0f);
        CHECK(amax(t).item() == 1.0f);
      } else if (bias) {
        CHECK(amax(abs(t)).item() == 0.0f);
      } else if (name.ends_with("output_linear.weight") || name.ends_with("linear_2.weight")) {
        ++writers;
        CHECK(std_of(t) == doctest::Approx(residual).epsilon(0.15));
      } else {
        if (name.find("position") != std::string::npos ||
            name.find("distance_embedding") != std::string::npos)
          ++tables;
        CHECK(std_of(t) == doctest::Approx(0.02).epsilon(0.15));
      }
    }
    return std::make_pair(writers, tables);
  };
  TransformerConfig c = small();
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_hidden_layers = c.num_decoder_layers = 3;
  manual_seed(0);
  Seq2SeqTransformer seq2seq(c);
  // 3 encoder layers (attention, feed-forward) and 3 decoder layers (self-attention,
  // cross-attention, feed-forward): 15 writers; a learned position table on each side.
  const auto [writers, tables] = check_all(seq2seq, 6);
  CHECK(writers == 15);
  CHECK(tables == 2);
  c.position_embedding_type = "relative_key";
  c.attention_type = "fused";
  TransformerForCausalLM lm(c);
  const auto [lm_writers, lm_tables] = check_all(lm, 3);
  CHECK(lm_writers == 6);
  CHECK(lm_tables == 3);  // each layer's table of relative distances
}

TEST_CASE("a layer built from parts passed in, as the Annotated Transformer's EncoderLayer") {
  TransformerConfig c = small();
  auto ffn = std::make_shared<nn::Sequential>();
  ffn->push_back(std::make_shared<nn::Linear>(c.hidden_size, 16));
  ffn->push_back(std::make_shared<nn::ReLU>());
  ffn->push_back(std::make_shared<nn::Linear>(16, c.hidden_size));
  auto norm_2 = std::make_shared<CountingNorm>(c);
  TransformerEncoderLayer layer(EncoderLayerParts{.attention = make_attention(c),
                                                  .feed_forward = ffn,
                                                  .layer_norm_1 = make_norm(c),
                                                  .layer_norm_2 = norm_2,
                                                  .dropout_p = 0.0f});
  layer.eval();  // no attention dropout
  Tensor x = randn({2, 3, c.hidden_size});
  Tensor y = layer.forward(x);
  CHECK(y.sizes() == Shape{2, 3, c.hidden_size});
  CHECK(norm_2->calls == 1);
  bool named = false;
  for (const auto& [name, p] : layer.named_parameters())
    named = named || name == "feed_forward.2.weight";
  CHECK(named);
  // y = x + attn(ln1(x)) + ffn(norm_2(x + attn(ln1(x)))): the feed-forward is really on the path.
  NoGradGuard no_grad;
  ffn->at<nn::Linear>(2)->weight.fill_(0.0f);
  ffn->at<nn::Linear>(2)->bias.fill_(0.0f);
  Tensor h = layer.layer_norm_1->forward(x);
  CHECK_CLOSE(layer.forward(x), x + layer.attention->forward(h, h, Tensor()), 1e-6, 1e-6);
}

TEST_CASE("a query whose every key is hidden passes zero gradient, not NaN") {
  manual_seed(4);
  Tensor q = randn({1, 3, 4}).requires_grad_(), k = randn({1, 5, 4}).requires_grad_(),
         v = randn({1, 5, 4}).requires_grad_();
  // Query 1 sees no key; queries 0 and 2 see some.
  Tensor mask = tensor({{{1.0f, 1.0f, 0.0f, 0.0f, 0.0f},
                         {0.0f, 0.0f, 0.0f, 0.0f, 0.0f},
                         {0.0f, 1.0f, 1.0f, 1.0f, 1.0f}}});
  auto out = scaled_dot_product_attention(q, k, v, mask);
  out.output.sum().backward();
  for (const Tensor& g : {q.grad(), k.grad(), v.grad()})
    for (float x : g.to_vector()) CHECK(std::isfinite(x));
  CHECK(amax(abs(q.grad().select(1, 1))).item() == 0.0f);  // the dead query learns nothing
  CHECK(amax(abs(q.grad().select(1, 0))).item() > 0.0f);   // the others do
  CHECK(amax(abs(out.weights.select(1, 1))).item() == 0.0f);
}

// FeedForward fuses nn::Linear then nn::GELU into linear_gelu, and the residual steps fuse
// nn::Dropout, add and nn::LayerNorm: a part of any other class, a subclass included, must still
// run its own forward.
TEST_CASE("fused paths step aside for a student's part: a GELU subclass in FeedForward") {
  struct Doubling : nn::GELU {
    Tensor forward(const Tensor& x) override { return x * 2.0f; }
  };
  TransformerConfig c = small();
  manual_seed(3);
  FeedForward ff(c);
  ff.eval();
  Tensor x = randn({2, 3, c.hidden_size});
  ff.gelu = std::make_shared<Doubling>();
  CHECK_CLOSE(ff.forward(x), ff.linear_2->forward(ff.linear_1->forward(x) * 2.0f), 1e-6, 1e-6);
  // The library's own GELU, tanh form, is fused, and computes the same function.
  ff.gelu = std::make_shared<nn::GELU>("tanh");
  CHECK_CLOSE(ff.forward(x), ff.linear_2->forward(gelu(ff.linear_1->forward(x), "tanh")), 1e-6,
              1e-6);
}
