// The chapter's classes: shapes, masks, attention and configs.
#include "checkpoints/checkpoints.hpp"
#include "model_fixtures.hpp"

using namespace anatomy;
using namespace anatomy::checkpoints;
using namespace anatomy::models;
using namespace anatomy::testing;

TEST_CASE("the chapter's shapes with bert-base-uncased's config") {
  const auto config = TransformerConfig::from_json_file(bert_config_path());
  CHECK(config.vocab_size == 30522);
  CHECK(config.hidden_size == 768);
  CHECK(config.num_attention_heads == 12);
  CHECK(config.intermediate_size == 3072);
  CHECK(config.layer_norm_eps == 1e-12);
  manual_seed(0);
  NoGradGuard no_grad;
  Tensor inputs = tensor({{2051, 10029, 2066, 2019, 8612}});  // "time flies like an arrow"
  Embeddings emb(config);
  emb.eval();
  Tensor x = emb.forward(inputs);
  CHECK(x.shape() == Shape{1, 5, 768});
  auto [attn_out, weights] = scaled_dot_product_attention(x, x, x);
  CHECK(weights.shape() == Shape{1, 5, 5});
  CHECK_CLOSE(weights.sum({-1}), ones({1, 5}), 1e-5, 1e-5);
  CHECK(attn_out.shape() == Shape{1, 5, 768});
  CHECK(MultiHeadAttention(config).forward(x).shape() == Shape{1, 5, 768});
  CHECK(FeedForward(config).forward(x).shape() == Shape{1, 5, 768});
  CHECK(TransformerEncoderLayer(config).forward(x).shape() == Shape{1, 5, 768});
  TransformerForSequenceClassification classifier(config);
  classifier.eval();
  CHECK(classifier.encoder->forward(inputs).shape() == Shape{1, 5, 768});
  CHECK(classifier.forward(inputs).shape() == Shape{1, 3});
}

TEST_CASE("token types: BERT's embeddings add a sentence A/B table, zeros when not given") {
  auto c = small();
  c.type_vocab_size = 2;
  CHECK(TransformerConfig::from_json_file(bert_config_path()).type_vocab_size == 2);
  manual_seed(11);
  Embeddings emb(c);
  emb.eval();
  NoGradGuard no_grad;
  const Tensor ids = tensor({{3, 7, 9, 4}}), types = tensor({{0, 0, 1, 1}});
  // Hugging Face's BertEmbeddings: LayerNorm(word[ids] + position[0..T) + token_type[types]).
  auto expected = [&](const Tensor& t) {
    Tensor sum = index_select(emb.token_embeddings->weight, 0, ids.select(0, 0)) +
                 emb.state_dict().at("position_embeddings.weight").narrow(0, 0, 4) +
                 index_select(emb.token_type_embeddings->weight, 0, t.select(0, 0));
    return emb.layer_norm->forward(sum.unsqueeze(0));
  };
  CHECK_CLOSE(emb.forward(ids, 0, types), expected(types), 1e-6, 1e-5);
  CHECK_CLOSE(emb.forward(ids), expected(zeros({1, 4}, kInt64)), 1e-6, 1e-5);
  CHECK((emb.forward(ids, 0, types) - emb.forward(ids)).abs().max().item() > 1e-2f);
  // The encoder passes them on; a model without token types refuses them.
  TransformerEncoder enc(c);
  enc.eval();
  CHECK((enc.forward(ids, Tensor(), types) - enc.forward(ids)).abs().max().item() > 1e-3f);
  check_error(
      [&] {
        emb.forward(ids, 0, tensor({{0, 2, 0, 0}}));
      },
      {"Embeddings", "token type 2 is out of range for type_vocab_size 2"});
  check_error(
      [&] {
        emb.forward(ids, 0, tensor({{0, 1}}));
      },
      {"Embeddings", "token_type_ids must be int64 [1, 4]", "[1, 2]"});
  Embeddings plain(small());
  check_error([&] { plain.forward(ids, 0, types); }, {"Embeddings", "type_vocab_size 0"});
}

TEST_CASE("config.json: unknown and invalid values are clear errors") {
  check_error([] { TransformerConfig::from_json(R"({"hiden_size": 768})", "c.json"); },
              {"c.json", "unknown key 'hiden_size'"});
  // What transformers 5's save_pretrained writes beside the sizes: read, and held to false where
  // a true would make another model.
  CHECK(TransformerConfig::from_json(
            R"({"hidden_size": 24, "num_attention_heads": 2, "is_decoder": false,
                "add_cross_attention": false, "dtype": "float32", "tie_word_embeddings": true})",
            "c.json")
            .hidden_size == 24);
  check_error([] { TransformerConfig::from_json(R"({"is_decoder": true})", "c.json"); },
              {"c.json", "'is_decoder' is true; only false is supported"});
  check_error([] { TransformerConfig::from_json(R"({"add_cross_attention": 1})", "c.json"); },
              {"c.json", "'add_cross_attention' is 1; only false is supported"});
  check_error(
      [] {
        TransformerConfig::from_json(R"({"hidden_size": 100, "num_attention_heads": 12})", "c");
      },
      {"hidden_size (100) must be divisible by num_attention_heads (12)"});
  check_error([] { TransformerConfig::from_json(R"({"hidden_size": "768"})", "c"); },
              {"'hidden_size' must be an integer", "\"768\""});
  check_error([] { TransformerConfig::from_json(R"({"hidden_dropout_prob": 1.5})", "c"); },
              {"hidden_dropout_prob must be in [0, 1)", "1.5"});
  check_error([] { TransformerConfig::from_json("{", "c"); }, {"not valid JSON"});
  // Ids run from 0 to vocab_size - 1: a pad id equal to the size is outside.
  check_error(
      [] { TransformerConfig::from_json(R"({"vocab_size": 30, "pad_token_id": 30})", "c"); },
      {"pad_token_id 30 is outside the vocabulary of 30"});
  CHECK(
      TransformerConfig::from_json(R"({"vocab_size": 30, "pad_token_id": 29})", "c").pad_token_id ==
      29);
  check_error([] { TransformerConfig::from_json_file("/nonexistent.json"); }, {"cannot open"});
  const auto round = TransformerConfig::from_json(small().to_json(), "round trip");
  CHECK(round.to_json() == small().to_json());
  // Written as Hugging Face's save_pretrained writes config.json: two-space indent, a final
  // newline, the fields in their declared order.
  const std::string json = small().to_json();
  CHECK(json.starts_with("{\n  \"vocab_size\": "));
  CHECK(json.ends_with("\n}\n"));
}

// Attention dropout in training: each weight is dropped (0) or scaled by 1/(1-p), and the output
// is those weights times the values; in eval the weights are untouched.
TEST_CASE("scaled_dot_product_attention applies dropout to the weights in training only") {
  manual_seed(31);
  const Tensor q = randn({1, 2, 6, 4}), k = randn({1, 2, 6, 4}), v = randn({1, 2, 6, 3});
  const auto plain = scaled_dot_product_attention(q, k, v, {.dropout_p = 0.5f, .training = false});
  const auto dropped = scaled_dot_product_attention(q, k, v, {.dropout_p = 0.5f, .training = true});
  const auto w = plain.weights.to_vector(), d = dropped.weights.to_vector();
  int zeros_seen = 0, scaled = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    zeros_seen += d[i] == 0.0f;
    scaled += std::abs(d[i] - 2.0f * w[i]) <= 1e-6f;
  }
  CHECK(zeros_seen + scaled == static_cast<int>(w.size()));
  CHECK(zeros_seen >= 12);  // of 72, about half
  CHECK(scaled >= 12);
  CHECK_CLOSE(dropped.output, matmul(dropped.weights, v), 1e-6, 1e-5);
  CHECK_CLOSE(plain.output, matmul(plain.weights, v), 1e-6, 1e-5);
}

TEST_CASE("the book's MultiHeadAttention and the fused one agree from the same weights") {
  manual_seed(1);
  MultiHeadAttention book(small(false));
  FusedMultiHeadAttention fused(small(true));
  fused.load_state_dict(to_fused_layout(book.state_dict(), 4));
  book.eval();
  fused.eval();  // training mode would apply (different) attention dropout to each
  fused.output_attentions = true;
  Tensor q = randn({2, 5, 16}), kv = randn({2, 7, 16});
  Tensor mask = padding_mask(tensor({{1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 0, 0, 0}}), 0);
  CHECK_CLOSE(book.forward(q, q, Tensor()), fused.forward(q, q, Tensor()), 1e-5, 1e-4);
  CHECK_CLOSE(book.forward(q, kv, mask), fused.forward(q, kv, mask), 1e-5, 1e-4);
  CHECK_CLOSE(book.last_attention, fused.last_attention, 1e-6, 1e-4);
  CHECK(fused.last_attention.shape() == Shape{2, 4, 5, 7});
  // And back: the fused weights in the book's layout reproduce the book module.
  MultiHeadAttention again(small(false));
  again.load_state_dict(to_book_layout(fused.state_dict(), 4));
  again.eval();
  CHECK_CLOSE(again.forward(q, kv, mask), fused.forward(q, kv, mask), 1e-5, 1e-4);
}

// The neuron view's vectors: the queries of the query input and the keys of the other input,
// whose scaled dot products, through a softmax, are the weights the module used.
TEST_CASE("last_queries_keys: the q and k behind last_attention, in both layouts") {
  manual_seed(3);
  MultiHeadAttention book(small(false));
  FusedMultiHeadAttention fused(small(true));
  CHECK_FALSE(book.last_queries_keys().first.defined());  // no forward yet
  fused.load_state_dict(to_fused_layout(book.state_dict(), 4));
  book.eval();
  fused.eval();
  fused.output_attentions = true;
  const Tensor x = randn({2, 5, 16}), memory = randn({2, 7, 16});
  book.forward(x, memory, Tensor());
  fused.forward(x, memory, Tensor());
  const auto [q, k] = fused.last_queries_keys();
  REQUIRE(q.shape() == Shape{2, 4, 5, 4});  // [B, H, Tq, D]: from x, not from memory
  REQUIRE(k.shape() == Shape{2, 4, 7, 4});
  const Tensor weights = softmax(matmul(q, k.transpose(-2, -1)) / 2.0f, -1);  // sqrt(D) = 2
  CHECK_CLOSE(weights, fused.last_attention, 1e-6, 1e-4);
  const auto [book_q, book_k] = book.last_queries_keys();
  CHECK_CLOSE(book_q, q, 1e-5, 1e-4);
  CHECK_CLOSE(book_k, k, 1e-5, 1e-4);
  // Head 1's query is that head's own projection (the heads are stacked in order).
  const auto& head1 = dynamic_cast<AttentionHead&>(*(*book.heads)[1]);
  CHECK_CLOSE(book_q.select(1, 1), head1.q->forward(x), 1e-6, 1e-5);
  // An encoder gives one pair per layer.
  TransformerEncoder encoder(small(true));
  encoder.eval();
  set_output_attentions(encoder, true);
  encoder.forward(tensor({{1, 2, 3}}));
  const auto layers = encoder.queries_keys();
  REQUIRE(layers.size() == 2);
  CHECK_CLOSE(softmax(matmul(layers[1].first, layers[1].second.transpose(-2, -1)) / 2.0f, -1),
              encoder.attentions()[1], 1e-6, 1e-4);
}

TEST_CASE("bias-free layers (nanoGPT's): no biases anywhere, both attention layouts agree") {
  auto config = [](bool fused) {
    TransformerConfig c = small(fused);
    c.bias = false;
    return c;
  };
  CHECK(TransformerConfig::from_json(config(true).to_json(), "round trip").bias == false);
  manual_seed(2);
  Seq2SeqTransformer book(config(false)), fused(config(true));
  for (const auto& [name, p] : fused.named_parameters()) {
    const std::string parameter = name;  // (INFO cannot name a structured binding in clang 14)
    INFO(parameter);
    // Only the output projection (a classifier-style head) keeps its bias.
    CHECK((!name.ends_with(".bias") || name.starts_with("generator")));
  }
  fused.load_state_dict(to_fused_layout(book.state_dict(), 4));
  book.eval();
  fused.eval();
  Tensor src = tensor({{3, 4, 5, 6}, {7, 8, 0, 0}}), tgt = tensor({{1, 2, 3}, {4, 5, 6}});
  CHECK_CLOSE(book.forward(src, tgt), fused.forward(src, tgt), 1e-5, 1e-4);
  nn::LayerNorm ln(Shape{8}, 1e-5f, true, false);
  CHECK(ln.named_parameters().size() == 1);
  CHECK_FALSE(ln.bias.defined());
}

TEST_CASE("scaled_dot_product_attention takes 2-D inputs (one sequence, no batch) as torch") {
  manual_seed(3);
  Tensor q = randn({3, 4}), k = randn({5, 4}), v = randn({5, 2});
  const auto flat = scaled_dot_product_attention(q, k, v);
  const auto batched = scaled_dot_product_attention(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0));
  CHECK(flat.output.shape() == Shape{3, 2});
  CHECK(flat.output.to_vector() == batched.output.to_vector());
  check_error([&] { scaled_dot_product_attention(randn({4}), k, v); },
              {"scaled_dot_product_attention", "at least 2 dims", "[4]"});
}

TEST_CASE("a query whose every key is masked gets zeros, not NaN") {
  Tensor q = randn({1, 3, 4}).requires_grad_();
  Tensor mask = tensor({{1.0f, 1.0f, 0.0f}, {0.0f, 0.0f, 0.0f}, {1.0f, 0.0f, 0.0f}});
  auto [out, w] = scaled_dot_product_attention(q, q, q, mask);
  CHECK(w.select(1, 1).abs().sum().item() == 0.0f);
  CHECK(out.select(1, 1).abs().sum().item() == 0.0f);
  CHECK_CLOSE(w.select(1, 0).sum({-1}), ones({1}), 1e-6, 1e-6);
  out.sum().backward();
  for (float g : q.grad().to_vector()) CHECK(std::isfinite(g));
}

TEST_CASE("causal masking: a future token changes no earlier output") {
  manual_seed(2);
  auto c = small();
  c.tie_word_embeddings = true;
  TransformerForCausalLM lm(c);
  lm.eval();
  Tensor a = tensor({{3, 7, 1, 9, 4, 2}}), b = tensor({{3, 7, 1, 9, 11, 12}});
  Tensor la = lm.forward(a), lb = lm.forward(b);
  CHECK_CLOSE(la.narrow(1, 0, 4), lb.narrow(1, 0, 4), 1e-6, 1e-6);
  CHECK(testing::compare(la.narrow(1, 4, 2), lb.narrow(1, 4, 2), 1e-3, 0).size() > 0);
  // Tied weights: one tensor under two names, one parameter.
  CHECK(lm.lm_head->weight.is_same(lm.decoder->embeddings->token_embeddings->weight));
  CHECK(lm.state_dict().count("lm_head.weight"));
  int64_t count = 0;
  for (const auto& [n, p] : lm.named_parameters()) count += n == "lm_head.weight";
  CHECK(count == 0);

  Seq2SeqTransformer s2s(small());
  s2s.eval();
  Tensor src = tensor({{5, 6, 7, 8}});
  Tensor ta = s2s.forward(src, tensor({{1, 4, 6, 3}})),
         tb = s2s.forward(src, tensor({{1, 4, 9, 9}}));
  CHECK_CLOSE(ta.narrow(1, 0, 2), tb.narrow(1, 0, 2), 1e-6, 1e-6);
}

TEST_CASE("padding changes no output at other positions") {
  manual_seed(3);
  TransformerEncoder enc(small());
  enc.eval();
  Tensor short_ids = tensor({{4, 9, 2}});
  Tensor padded = tensor({{4, 9, 2, 0, 0}});
  Tensor h_short = enc.forward(short_ids);
  Tensor h_pad = enc.forward(padded, tensor({{1, 1, 1, 0, 0}}));
  CHECK_CLOSE(h_pad.narrow(1, 0, 3), h_short, 1e-5, 1e-5);
  // In a batch: the padded row's real positions equal the row on its own.
  Seq2SeqTransformer s2s(small());
  s2s.eval();
  Tensor tgt = tensor({{1, 5}, {1, 5}});
  Tensor batch = s2s.forward(tensor({{4, 9, 2, 7}, {4, 9, 2, 0}}), tgt);
  Tensor alone = s2s.forward(tensor({{4, 9, 2}}), tensor({{1, 5}}));
  CHECK_CLOSE(batch.select(0, 1), alone.select(0, 0), 1e-5, 1e-5);
}

TEST_CASE("bad inputs give clear errors") {
  manual_seed(7);
  Seq2SeqTransformer s2s(small());
  check_error(
      [&] {
        s2s.forward(tensor({{5, 30}}), tensor({{1}}));
      },
      {"Embeddings", "token id 30 is out of range for vocab_size 30"});
  check_error(
      [&] {
        s2s.forward(tensor({{5, 6}}), tensor({{1, 25}}));
      },
      {"token id 25", "vocab_size 20"});
  check_error(
      [&] {
        s2s.forward(zeros({1, 30}, kInt64), tensor({{1}}));
      },
      {"30 tokens", "max_position_embeddings 24"});
  // Either input not [batch, seq] is refused, the other being right.
  check_error(
      [&] {
        s2s.forward(tensor({5, 6}), tensor({{1}}));
      },
      {"Seq2SeqTransformer", "expected ids [batch, seq]", "source [2]"});
  check_error(
      [&] {
        s2s.forward(tensor({{5, 6}}), tensor({1}));
      },
      {"Seq2SeqTransformer", "expected ids [batch, seq]", "target [1]"});
  check_error(
      [&] {
        s2s.forward(tensor({{5, 6}, {7, 8}}), tensor({{1, 2, 3}}));
      },
      {"source batch 2 and target batch 1 differ"});
  const auto encoded = s2s.encode(tensor({{5, 6}, {7, 8}}));
  check_error([&] { s2s.decoder->forward(tensor({{1}}), encoded.first, encoded.second); },
              {"decoder batch 1 and encoder batch 2 differ"});
  check_error([&] { s2s.encoder->forward(randn({1, 4})); }, {"Embeddings", "int64"});
  FusedMultiHeadAttention mha(small());
  check_error(
      [&] {
        mha.forward(randn({1, 4, 8}));
      },
      {"FusedMultiHeadAttention", "[batch, seq, 16]"});
  MultiHeadAttention book(small(false));
  KVCache cache;
  check_error(
      [&] {
        book.forward(randn({1, 2, 16}), randn({1, 2, 16}), Tensor(), cache, false);
      },
      {"KV cache", "fused"});
}

// Each input check of the form `if (a || b) throw` is hit with one clause true and the other
// false, so that a check which tested only one of them (or needed both) would let bad input in.
TEST_CASE("models: each clause of an input check refuses on its own") {
  manual_seed(5);
  const auto c = small();
  // check_attention_inputs: rank alone, width alone, for the query and for the key/value.
  FusedMultiHeadAttention mha(c);
  const Tensor good = randn({1, 3, 16});
  check_error([&] { mha.forward(randn({3, 16})); }, {"FusedMultiHeadAttention", "got [3, 16]"});
  check_error([&] { mha.forward(randn({1, 3, 8})); }, {"FusedMultiHeadAttention", "got [1, 3, 8]"});
  MultiHeadAttention book(small(false));
  check_error(
      [&] {
        book.forward(good, randn({3, 16}), Tensor());
      },
      {"MultiHeadAttention", "got [3, 16]"});
  check_error(
      [&] {
        book.forward(good, randn({1, 3, 8}), Tensor());
      },
      {"MultiHeadAttention", "[batch, seq, 16]", "got [1, 3, 8]"});
  CHECK(book.forward(good, randn({1, 5, 16}), Tensor()).shape() == Shape{1, 3, 16});
  // Batches that differ: the message gives each (the key/value's second size, 5, is not its batch).
  check_error(
      [&] {
        book.forward(randn({2, 3, 16}), randn({4, 5, 16}), Tensor());
      },
      {"MultiHeadAttention", "query batch 2 and key/value batch 4 differ"});
  // Embeddings: int64 of the wrong rank; a negative id or token type.
  Embeddings emb([&] {
    auto t = c;
    t.type_vocab_size = 2;
    return t;
  }());
  check_error([&] { emb.forward(tensor({3, 7})); }, {"Embeddings", "int64 token ids", "[2]"});
  check_error([&] { emb.forward(tensor({{3, -1}})); }, {"Embeddings", "token id -1"});
  check_error(
      [&] {
        emb.forward(tensor({{3, 7}}), 0, tensor({{0, -1}}));
      },
      {"Embeddings", "token type -1", "type_vocab_size 2"});
  check_error(
      [&] {
        emb.forward(tensor({{3, 7}}), 0, tensor({{0.0f, 1.0f}}));
      },
      {"Embeddings", "token_type_ids must be int64 [1, 2]"});
  // Pooler: [B, E] without a sequence dimension, and a sequence of length 0.
  Pooler pooler(c);
  check_error([&] { pooler.forward(randn({2, 16})); }, {"Pooler", "T >= 1", "got [2, 16]"});
  check_error([&] { pooler.forward(randn({2, 0, 16})); }, {"Pooler", "got [2, 0, 16]"});
  CHECK(pooler.forward(randn({2, 1, 16})).shape() == Shape{2, 16});
  // scaled_dot_product_attention: a 1-D key alone, a 1-D value alone.
  const Tensor q = randn({3, 4}), k = randn({5, 4}), v = randn({5, 2});
  check_error([&] { scaled_dot_product_attention(q, randn({4}), v); },
              {"scaled_dot_product_attention", "at least 2 dims", "[3, 4], [4], [5, 2]"});
  check_error([&] { scaled_dot_product_attention(q, k, randn({2})); },
              {"scaled_dot_product_attention", "at least 2 dims", "[3, 4], [5, 4], [2]"});
  // --set: no '=' at all, and nothing before it.
  auto d = small();
  check_error([&] { d.set("=16"); }, {"--set", "name=value", "'=16'"});
}

TEST_CASE("padding_mask: [B, 1, T] with 0 at the padding, and its input checked") {
  CHECK(padding_mask(tensor({{5, 0, 7}}), 0).to_vector() == std::vector<float>{1, 0, 1});
  CHECK(padding_mask(tensor({{5, 0, 7}}), 0).shape() == Shape{1, 1, 3});
  check_error(
      [] {
        padding_mask(tensor({{5.0f, 0.0f}}), 0);
      },
      {"padding_mask", "int64 ids [batch, seq]", "[1, 2]"});
  check_error([] { padding_mask(tensor({5, 0, 7}), 0); }, {"padding_mask", "[3]"});
}

TEST_CASE("combine_masks: both masks at once, an undefined one meaning none") {
  Tensor pad = tensor({{{1.0f, 1.0f, 0.0f}}});  // [1, 1, 3]
  Tensor causal = tensor({{1.0f, 0.0f, 0.0f}, {1.0f, 1.0f, 0.0f}, {1.0f, 1.0f, 1.0f}});  // [3, 3]
  const auto both = combine_masks(pad, causal);
  CHECK(both.sizes() == Shape{1, 3, 3});
  CHECK(both.to_vector() == std::vector<float>{1, 0, 0, 1, 1, 0, 1, 1, 0});
  CHECK(combine_masks(Tensor(), causal).is_same(causal));
  CHECK(combine_masks(pad, Tensor()).is_same(pad));
  CHECK_FALSE(combine_masks(Tensor(), Tensor()).defined());
}

TEST_CASE("share_embeddings: one table for source and target, trained as one") {
  auto c = small();
  c.target_vocab_size = c.vocab_size;
  c.share_embeddings = true;
  Seq2SeqTransformer shared(c);
  c.share_embeddings = false;
  Seq2SeqTransformer separate(c);
  // One table fewer to learn.
  CHECK(separate.num_parameters() - shared.num_parameters() == c.vocab_size * c.hidden_size);
  Tensor& enc = shared.encoder->embeddings->token_embeddings->weight;
  Tensor& dec = shared.decoder->embeddings->token_embeddings->weight;
  CHECK(enc.is_same(dec));
  // A gradient through the decoder's embedding reaches the one table.
  shared.train();
  shared.forward(tensor({{3, 4}}), tensor({{5, 6}})).sum().backward();
  REQUIRE(enc.grad().defined());
  CHECK(enc.grad().abs().select(0, 5).sum().item() > 0.0f);  // a target-only token
  auto bad = small();
  bad.share_embeddings = true;  // 30 source tokens, 20 target tokens
  check_error([&] { bad.validate(); }, {"share_embeddings", "one vocabulary"});
}

// Hugging Face configs give the classes as id2label (num_labels is implied), and hidden_act
// picks the feed-forward's activation: relu is max(0, x), gelu_new the tanh form.
TEST_CASE("config: id2label sets num_labels, hidden_act picks the activation") {
  const auto c = TransformerConfig::from_json(
      R"({"hidden_size": 8, "num_attention_heads": 2, "intermediate_size": 16,
          "id2label": {"0": "NEGATIVE", "1": "POSITIVE"}})",
      "hf");
  CHECK(c.num_labels == 2);
  const std::string both = R"({"hidden_size": 8, "num_attention_heads": 2, "intermediate_size": 16,
      "num_labels": 3, "id2label": {"0": "a", "1": "b", "2": "c"}})";
  CHECK(TransformerConfig::from_json(both, "hf").num_labels == 3);
  auto disagree = both;
  disagree.replace(disagree.find("\"num_labels\": 3"), std::string("\"num_labels\": 3").size(),
                   "\"num_labels\": 4");
  check_error([&] { TransformerConfig::from_json(disagree, "hf"); },
              {"config: hf", "num_labels is 4", "id2label names 3 labels"});
  // "id2label": null is Hugging Face's id2label=None, not given: num_labels keeps its value.
  const auto given_null = TransformerConfig::from_json(
      R"({"hidden_size": 8, "num_attention_heads": 2, "intermediate_size": 16,
          "num_labels": 5, "id2label": null})",
      "hf");
  CHECK(given_null.num_labels == 5);
  manual_seed(8);
  Tensor x = randn({1, 3, 8});
  for (const std::string act : {"relu", "gelu", "gelu_new"}) {
    CAPTURE(act);
    auto a = c;
    a.hidden_act = act;
    FeedForward ff(a);
    ff.eval();
    Tensor h = ff.linear_1->forward(x);
    Tensor want = act == "relu" ? relu(h) : act == "gelu" ? gelu(h) : gelu(h, "tanh");
    CHECK_CLOSE(ff.forward(x), ff.linear_2->forward(want), 1e-6, 1e-6);
  }
}

TEST_CASE("Embeddings: a vocabulary of its own, or the config's for 0 or less") {
  const auto c = small();
  CHECK(Embeddings(c, 7).token_embeddings->weight.shape() == Shape{7, c.hidden_size});
  for (int64_t none : {int64_t{0}, int64_t{-1}}) {
    CAPTURE(none);
    CHECK(Embeddings(c, none).token_embeddings->weight.shape() ==
          Shape{c.vocab_size, c.hidden_size});
  }
}

TEST_CASE("causal_mask: the queries are the last Tq of Tk keys, and no keys give an empty mask") {
  CHECK(causal_mask(3).to_vector() == std::vector<float>{1, 0, 0, 1, 1, 0, 1, 1, 1});
  // Two new queries after two cached keys: each sees the cache and itself.
  CHECK(causal_mask(2, 4).to_vector() == std::vector<float>{1, 1, 1, 0, 1, 1, 1, 1});
  CHECK(causal_mask(3, 0).shape() == Shape{3, 0});
}

// Without the weights, attention takes the fused path only when query, key and value share their
// batch dims; keys broadcast over the query's batch go the composed way, and both give what the
// weights path gives.
TEST_CASE("scaled_dot_product_attention without weights: shared and broadcast batch dims") {
  manual_seed(20);
  Tensor q = randn({2, 3, 4, 8}), k = randn({2, 3, 5, 8}), v = randn({2, 3, 5, 8});
  Tensor k1 = randn({1, 3, 5, 8}), v1 = randn({1, 3, 5, 8});
  const auto with = [](const Tensor& a, const Tensor& b, const Tensor& c) {
    return scaled_dot_product_attention(a, b, c).output;
  };
  const auto without = [](const Tensor& a, const Tensor& b, const Tensor& c) {
    return scaled_dot_product_attention(a, b, c, {.need_weights = false}).output;
  };
  CHECK_CLOSE(without(q, k, v), with(q, k, v), 1e-5, 1e-5);
  CHECK_CLOSE(without(q, k1, v1), with(q, k1, v1), 1e-5, 1e-5);
  CHECK(without(q, k1, v1).shape() == Shape{2, 3, 4, 8});
}
