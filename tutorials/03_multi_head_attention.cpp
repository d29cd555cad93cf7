// Tutorial 03: one attention head, then several. A head projects the embeddings to queries,
// keys and values of size 64 with its own Linear layers, so it can learn which relations to
// look for; MultiHeadAttention runs 12 heads side by side and mixes their concatenated outputs
// with output_linear. The page written at the end shows the heads' attention for the book's
// two sentences ("time flies like an arrow" / "fruit flies like a banana"), BertViz-style.
#include "chapter.hpp"
#include "viz/attention_view.hpp"

using namespace anatomy;

int main(int argc, char** argv) {
  tutorial::Tutorial t(
      argc, argv, "03 - Multi-head attention",
      "AttentionHead, MultiHeadAttention, and a picture of what the heads attend to.", {"--vocab"});
  manual_seed(0);
  bool real = false;
  const auto tokenizer = tutorial::bert_tokenizer(t, real);
  const auto config = tutorial::bert_config();
  nn::Embedding token_emb(real ? config.vocab_size : tokenizer.vocab().size(), config.hidden_size);
  const auto ids = tokenizer.encode(tutorial::kText);
  Tensor inputs_embeds = token_emb.forward(from_vector(ids, {1, 5}));

  t.section("One head: its own q, k, v projections, 768 -> 64");
  models::AttentionHead head(config.hidden_size, config.head_dim());
  fmt::print("{}\n\n", head);
  Tensor one = head.forward(inputs_embeds);
  fmt::print("head(inputs_embeds).size()\n{}\n", one.sizes());
  t.check(one.sizes() == Shape{1, 5, 64}, "one head gives [1, 5, 64]");

  t.section("Twelve heads, concatenated, then output_linear");
  auto config_book = config;
  config_book.attention_type = "book";
  models::MultiHeadAttention multihead_attn(config_book);
  multihead_attn.eval();  // no attention dropout: the outputs below are deterministic
  Tensor attn_output = multihead_attn.forward(inputs_embeds);
  fmt::print("multihead_attn has {} heads and {} parameters\n", multihead_attn.heads->size(),
             multihead_attn.num_parameters());
  fmt::print("attn_output.size()\n{}\n", attn_output.sizes());
  t.check(attn_output.sizes() == Shape{1, 5, 768}, "multi-head attention gives [1, 5, 768]");

  t.section("The same function, fused: one QKV projection, heads as a batch dimension");
  models::FusedMultiHeadAttention fused(config);
  fused.load_state_dict(
      models::to_fused_layout(multihead_attn.state_dict(), config.num_attention_heads));
  fused.eval();
  Tensor fused_output = fused.forward(inputs_embeds);
  fmt::print("fused qkv weight: {} (the 12 heads' q rows, then k rows, then v rows)\n",
             fused.qkv->weight.sizes());
  fmt::print("largest difference from the book's module: {:.2e}\n",
             (fused_output - attn_output).abs().max().item());
  t.check((fused_output - attn_output).abs().max().item() < 1e-4f,
          "the fused module computes the same outputs");

  t.section("What the heads attend to (an untrained model: the pattern is random for now)");
  std::vector<viz::AttentionSection> sections;
  for (const std::string& text :
       {std::string(tutorial::kText), std::string("fruit flies like a banana")}) {
    const auto sid = tokenizer.encode(text);
    Tensor emb = token_emb.forward(from_vector(sid, {1, static_cast<int64_t>(sid.size())}));
    multihead_attn.forward(emb);
    const auto toks = tokenizer.tokenize(text);
    sections.push_back({text, toks, toks, {multihead_attn.last_attention.select(0, 0).detach()}});
  }
  fmt::print("head 0 on \"{}\":\n{}", tutorial::kText,
             viz::terminal_heatmap(sections[0].layers[0].select(0, 0), sections[0].left,
                                   sections[0].right));
  const std::string page = t.output("03_attention.html");
  viz::write_attention_html(page, "Multi-head attention (untrained): time flies / fruit flies",
                            sections);
  fmt::print(
      "\nwrote {}: open it in a browser, pick a sentence and a head.\n"
      "For a trained model's attention: anatomy attention --checkpoint DIR --out FILE.html TEXT\n",
      page);
  t.check(std::filesystem::exists(page), "the attention page was written");
  return t.finish();
}
