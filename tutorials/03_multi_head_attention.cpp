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
      checkpoints::to_fused_layout(multihead_attn.state_dict(), config.num_attention_heads));
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
    // With each head's queries and keys, for the page's neuron view.
    const auto [queries, keys] = multihead_attn.last_queries_keys();
    sections.push_back({text, toks, toks, {multihead_attn.last_attention.select(0, 0).detach()}});
    sections.back().queries = {queries.select(0, 0)};
    sections.back().keys = {keys.select(0, 0)};
  }
  fmt::print("head 0 on \"{}\":\n{}", tutorial::kText,
             viz::terminal_heatmap(sections[0].layers[0].select(0, 0), sections[0].left,
                                   sections[0].right));
  const std::string page = t.output("03_attention.html");
  viz::write_attention_html(page, "Multi-head attention (untrained): time flies / fruit flies",
                            sections, viz::kUntrainedNote);
  fmt::print(
      "\nwrote {}: open it in a browser, pick a sentence and a head.\n"
      "For a trained model's attention: anatomy attention --checkpoint DIR --out FILE.html TEXT\n",
      page);
  t.check(std::filesystem::exists(page), "the attention page was written");

  t.section("The book's pair on a pretrained BERT: [CLS] A [SEP] B [SEP]");
  if (const auto bert = tutorial::pretrained_bert(t)) {
    // As the book feeds BertViz: one input, sentence B marked by token_type_ids.
    const auto tok = text::load_folder_tokenizer(bert->dir);
    const auto pair = tok->encode_plus(tutorial::kText, std::string("fruit flies like a banana"));
    const auto T = static_cast<int64_t>(pair.input_ids.size());
    fmt::print("tokens: [{}]\ntoken_type_ids: [{}]\n", fmt::join(pair.tokens, ", "),
               fmt::join(pair.token_type_ids, ", "));
    NoGradGuard no_grad;
    models::set_output_attentions(*bert->model, true);
    bert->model->forward(from_vector(pair.input_ids, {1, T}), Tensor(),
                         from_vector(pair.token_type_ids, {1, T}));
    std::vector<Tensor> layers, queries, keys;
    for (const auto& w : bert->model->attentions()) layers.push_back(w.select(0, 0));
    for (const auto& [q, k] : bert->model->queries_keys())
      queries.push_back(q.select(0, 0)), keys.push_back(k.select(0, 0));
    t.check(static_cast<int64_t>(layers.size()) == bert->config.num_hidden_layers &&
                layers[0].sizes() == Shape{bert->config.num_attention_heads, T, T},
            "one [heads, tokens, tokens] attention per layer");
    // The chapter's observation: the two "flies" are one token but attend differently, because
    // their contexts differ. Many heads park most of their weight on [CLS] or [SEP]; the head
    // shown is the one whose two "flies" rows put the most weight on a word.
    const auto first = std::find(pair.tokens.begin(), pair.tokens.end(), "flies");
    const auto second = std::find(first + 1, pair.tokens.end(), "flies");
    if (second != pair.tokens.end()) {
      const int64_t a = first - pair.tokens.begin(), b = second - pair.tokens.begin();
      const auto is_word = [&](int64_t k) {
        return pair.tokens[k] != "[CLS]" && pair.tokens[k] != "[SEP]";
      };
      // The key a row weighs most among the words, and that weight.
      const auto top_word = [&](const Tensor& row) {
        const auto w = row.to_vector();
        int64_t best = -1;
        for (int64_t k = 0; k < T; ++k)
          if (is_word(k) && (best < 0 || w[k] > w[best])) best = k;
        return std::pair<int64_t, float>{best, w[best]};
      };
      float largest = 0, best_score = -1;
      int64_t best_layer = 0, best_head = 0;
      for (size_t l = 0; l < layers.size(); ++l)
        for (int64_t h = 0; h < layers[l].size(0); ++h) {
          const Tensor rows = layers[l].select(0, h);
          largest = std::max(largest, (rows.select(0, a) - rows.select(0, b)).abs().max().item());
          const float score =
              top_word(rows.select(0, a)).second + top_word(rows.select(0, b)).second;
          if (score > best_score)
            best_score = score, best_layer = static_cast<int64_t>(l), best_head = h;
        }
      const Tensor rows = layers[best_layer].select(0, best_head);
      const auto [key_a, weight_a] = top_word(rows.select(0, a));
      const auto [key_b, weight_b] = top_word(rows.select(0, b));
      fmt::print("layer {}, head {}: flies (A) looks at {} ({:.2f}), flies (B) at {} ({:.2f})\n",
                 best_layer, best_head, pair.tokens[key_a], weight_a, pair.tokens[key_b], weight_b);
      t.check(largest > 0.01f, "the two \"flies\" attend differently");
    }
    const std::string bert_page = t.output("03_bert_attention.html");
    viz::AttentionSection section{"BERT self-attention", pair.tokens, pair.tokens, layers};
    section.sentence_b_start = pair.sentence_b_start;  // BertViz's A -> B / B -> A filters
    section.queries = queries, section.keys = keys;
    viz::write_attention_html(
        bert_page, "BERT: time flies like an arrow / fruit flies like a banana", {section});
    fmt::print("wrote {}: the pretrained model's heads, every layer\n", bert_page);
  }
  return t.finish();
}
