// Tutorial 05: layer normalization and the encoder layer. Layer norm rescales each token's
// vector to zero mean and unit variance (then a learned scale and shift). Where it goes matters:
// post-layer norm (the original paper) normalizes after each residual addition; pre-layer norm
// (the book's choice) normalizes the input of each sublayer, which trains more stably.
#include "chapter.hpp"

using namespace anatomy;

int main(int argc, char** argv) {
  tutorial::Tutorial t(argc, argv, "05 - Layer norm and the encoder layer",
                       "LayerNorm, then TransformerEncoderLayer with pre- and post-layer norm.");
  manual_seed(0);
  const auto config = tutorial::bert_config();
  Tensor inputs_embeds = randn({1, 5, 768}) * 3.0f + 1.0f;

  t.section("LayerNorm: each token's 768 values to mean 0, variance 1");
  nn::LayerNorm layer_norm(Shape{768}, static_cast<float>(config.layer_norm_eps));
  fmt::print("{}\n", layer_norm);
  Tensor normed = layer_norm.forward(inputs_embeds);
  fmt::print("before: mean {:.3f}, std {:.3f}\nafter:  mean {:.3f}, std {:.3f}\n",
             inputs_embeds.mean().item(), std::sqrt(inputs_embeds.var().item()),
             normed.mean().item(), std::sqrt(normed.var({}, false).item()));
  t.check(normed.mean({-1}).abs().max().item() < 1e-5f, "every token has mean 0 after layer norm");
  t.check((normed.var({-1}, false) - ones({1, 5})).abs().max().item() < 1e-3f, "and variance 1");

  t.section("The encoder layer, pre-layer norm (the book's)");
  models::TransformerEncoderLayer encoder_layer(config);
  encoder_layer.eval();
  fmt::print("{}\n\n", encoder_layer);
  Tensor out = encoder_layer.forward(inputs_embeds);
  fmt::print("inputs_embeds.shape, encoder_layer(inputs_embeds).size()\n({}, {})\n",
             inputs_embeds.sizes(), out.sizes());
  t.check(out.sizes() == Shape{1, 5, 768}, "the encoder layer keeps the shape [1, 5, 768]");

  t.section("Post-layer norm (the paper's), from the same weights");
  auto post_config = config;
  post_config.pre_layer_norm = false;
  models::TransformerEncoderLayer post(post_config);
  post.load_state_dict(encoder_layer.state_dict());
  post.eval();
  Tensor out_post = post.forward(inputs_embeds);
  fmt::print(
      "pre-LN output:  mean {:.3f}, std {:.3f}  (the residual stream keeps the input's scale)\n",
      out.mean().item(), std::sqrt(out.var().item()));
  fmt::print("post-LN output: mean {:.3f}, std {:.3f}  (normalized after every addition)\n",
             out_post.mean().item(), std::sqrt(out_post.var().item()));
  t.check(std::abs(std::sqrt(out_post.var({-1}, false).mean().item()) - 1.0f) < 0.05f,
          "post-LN outputs are normalized per token");
  t.check(std::sqrt(out.var().item()) > 2.0f, "pre-LN outputs keep the residual stream's scale");

  t.section("The same classes in a pretrained BERT: post-LN, layer by layer");
  if (const auto bert = tutorial::pretrained_bert(t)) {
    // BERT was trained post-LN: each of its layers ends in a LayerNorm, so every token leaves
    // every layer normalized again (then scaled by that norm's learned weight).
    NoGradGuard no_grad;
    auto& model = *bert->model;
    const auto tok = text::load_folder_tokenizer(bert->dir);
    const auto ids = tok->encode_plus(tutorial::kText).input_ids;
    const Tensor input = from_vector(ids, {1, static_cast<int64_t>(ids.size())});
    fmt::print("pre_layer_norm = {}: {} layers of {}\n", bert->config.pre_layer_norm,
               model.layers->size(),
               model.layers->at<models::TransformerEncoderLayer>(0)->type_name());
    Tensor x = model.embeddings->forward(input, 0);
    fmt::print("per-token std after each layer:");
    for (size_t l = 0; l < model.layers->size(); ++l) {
      x = model.layers->at<models::TransformerEncoderLayer>(l)->forward(x);
      fmt::print(" {:.2f}", std::sqrt(x.var({-1}, false).mean().item()));
    }
    fmt::print("\n");
    t.check(!bert->config.pre_layer_norm, "BERT's layers are post-LN");
    t.check((x - model.forward(input)).abs().max().item() < 1e-5f,
            "embeddings, then each layer in turn, is the encoder's forward");
  }
  return t.finish();
}
