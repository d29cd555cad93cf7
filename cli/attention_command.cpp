// anatomy attention: the attention of a trained model on one input, as a self-contained HTML
// page (and optionally one layer/head as an SVG heatmap). For a translation model: encoder
// self-attention, decoder self-attention, and encoder-decoder attention (the alignment between
// the source and the translation the model produces). With --model-dir DIR, or neither option (the
// pretrained BERT make setup puts in the cache): a BERT's self-attention on one sentence or a pair
// ([CLS] A [SEP] B [SEP], as the book shows it).
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "tokenizers/hugging_face_tokenizer.hpp"
#include "training/training.hpp"
#include "viz/attention_view.hpp"

namespace anatomy::cli {

namespace {

std::vector<Tensor> first_row(const std::vector<Tensor>& layers) {
  std::vector<Tensor> out;
  for (const auto& w : layers) out.push_back(w.select(0, 0));  // drop the batch dim
  return out;
}

std::vector<std::string> token_strings(const text::Tokenizer& tok,
                                       const std::vector<int64_t>& ids) {
  std::vector<std::string> out;
  for (int64_t id : ids) out.push_back(tok.vocab().token(id));
  return out;
}

// What each position of a decoder predicts: the most likely next token of its logits [1, T, V].
std::vector<std::string> predictions(const text::Tokenizer& tok, const Tensor& logits) {
  return token_strings(tok, argmax(logits.select(0, 0), -1).to_int_vector());
}

// A section with the neuron view's vectors (the batch's only row), when the layout keeps them.
viz::AttentionSection section(std::string name, std::vector<std::string> left,
                              std::vector<std::string> right, const std::vector<Tensor>& weights,
                              const std::vector<std::pair<Tensor, Tensor>>& queries_keys) {
  viz::AttentionSection s{std::move(name), std::move(left), std::move(right), first_row(weights)};
  for (const auto& qk : queries_keys) {
    if (!qk.first.defined() || !qk.second.defined()) {
      s.queries.clear(), s.keys.clear();
      break;
    }
    s.queries.push_back(qk.first.select(0, 0));
    s.keys.push_back(qk.second.select(0, 0));
  }
  return s;
}

struct AttentionOptions {
  std::string checkpoint, bert, out, svg, text, text_pair;
  std::vector<std::string> pair;  // --pair A B
  int64_t layer = -1, head = 0;
  SearchOptions search;  // a translation run's: the translation whose attention is drawn
};

// The HTML page of every section, and --svg's heatmap of the last one.
int write_pages(const AttentionOptions& o, const std::vector<viz::AttentionSection>& sections) {
  const std::string title = o.text_pair.empty()
                                ? fmt::format("Attention: \"{}\"", o.text)
                                : fmt::format("Attention: \"{}\" / \"{}\"", o.text, o.text_pair);
  viz::write_attention_html(o.out, title, sections);
  fmt::print("wrote {}: open it in a browser\n", o.out);
  if (!o.svg.empty()) {
    const auto& sec = sections.back();
    const int64_t L = static_cast<int64_t>(sec.layers.size());
    const int64_t layer = o.layer < 0 ? L - 1 : o.layer;
    if (layer >= L || o.head < 0 || o.head >= sec.layers[0].size(0))
      throw Error(
          fmt::format("attention: --layer {} / --head {} out of range ({} layers, {} heads)", layer,
                      o.head, L, sec.layers[0].size(0)));
    write_file_atomically(
        o.svg, viz::heatmap_svg(sec.layers[layer].select(0, o.head), sec.left, sec.right,
                                fmt::format("{}, layer {}, head {}", sec.name, layer, o.head)));
    fmt::print("wrote {}\n", o.svg);
  }
  return 0;
}

void declare_options(CLI::App& cmd, AttentionOptions& o) {
  auto* checkpoint =
      cmd.add_option("--checkpoint", o.checkpoint, "a run folder from anatomy train");
  auto* bert = cmd.add_option(
      "--model-dir,--bert", o.bert,
      "a Hugging Face BERT folder (config.json, model.safetensors, tokenizer.json or vocab.txt) "
      "instead (default: the pretrained BERT of make setup)");
  checkpoint->excludes(bert);
  bert->excludes(checkpoint);
  cmd.add_option("--out", o.out, "the HTML file to write")->required();
  cmd.add_option("--svg", o.svg, "also write one layer/head as an SVG heatmap");
  o.search.add_to(cmd);
  cmd.add_option("--layer", o.layer, "layer for --svg (default: the last)")
      ->check(in_range(-1, 1e4));
  cmd.add_option("--head", o.head, "head for --svg")
      ->capture_default_str()
      ->check(in_range(0, 1e4));
  auto* text = cmd.add_option("text", o.text, "the input text");
  cmd.add_option("text_pair", o.text_pair,
                 "a second sentence (--model-dir: [CLS] A [SEP] B [SEP])");
  auto* pair = cmd.add_option("--pair", o.pair,
                              "two sentences, A and B (--model-dir), instead of text text_pair")
                   ->expected(2);
  pair->excludes(text);
}

// Settles the input text and the model: --pair's two sentences, and without --checkpoint or
// --model-dir the pretrained BERT make setup put in the cache, as the tutorials use it.
void resolve_inputs(AttentionOptions& o) {
  if (!o.pair.empty()) o.text = o.pair[0], o.text_pair = o.pair[1];
  if (o.text.empty())
    throw Error("attention: give the input text (or --pair A B for a BERT sentence pair)");
  if (o.checkpoint.empty() && o.bert.empty()) {
    o.bert = checkpoints::find_pretrained_bert();
    if (o.bert.empty())
      throw Error(fmt::format(
          "attention: give --checkpoint RUN (a trained model) or --model-dir DIR (a BERT "
          "folder); no pretrained BERT is set up to use by default (make setup puts one in {})",
          checkpoints::pretrained_cache_dir().empty() ? std::string("~/.cache/anatomy")
                                                      : checkpoints::pretrained_cache_dir()));
    fmt::print("(pretrained BERT: {})\n", o.bert);
  }
  if (!o.text_pair.empty() && o.bert.empty())
    throw Error("attention: a second sentence is for --model-dir (a run's model reads one input)");
}

// A BERT folder's self-attention on one sentence or a pair.
std::vector<viz::AttentionSection> bert_sections(const AttentionOptions& o) {
  const auto bert = checkpoints::load_bert_folder(o.bert);
  if (!o.text_pair.empty() && bert.config.type_vocab_size < 2)
    throw Error(fmt::format(
        "attention: {} has {} token type(s) (type_vocab_size); a sentence pair needs 2, one "
        "for each sentence",
        o.bert, bert.config.type_vocab_size));
  const auto tok = text::load_folder_tokenizer(bert.dir);
  const auto enc =
      o.text_pair.empty() ? tok->encode_plus(o.text) : tok->encode_plus(o.text, o.text_pair);
  const auto T = static_cast<int64_t>(enc.input_ids.size());
  if (T > bert.config.max_position_embeddings)
    throw Error(fmt::format("attention: the input is {} tokens; this model reads at most {}", T,
                            bert.config.max_position_embeddings));
  models::set_output_attentions(*bert.model, true);
  bert.model->forward(
      from_vector(enc.input_ids, {1, T}), Tensor(),
      bert.config.type_vocab_size > 0 ? from_vector(enc.token_type_ids, {1, T}) : Tensor());
  std::vector<viz::AttentionSection> sections;
  sections.push_back(section("BERT self-attention", enc.tokens, enc.tokens,
                             bert.model->attentions(), bert.model->queries_keys()));
  sections.back().sentence_b_start = enc.sentence_b_start;
  return sections;
}

// A translation run's three attentions. The translation `translate` gives, with the same search
// (its default beam, or --beam), is the decoder's input whose attention is drawn.
std::vector<viz::AttentionSection> translation_sections(const AttentionOptions& o) {
  training::Translator tr = training::Translator::load(o.checkpoint);
  const auto src = tr.encode_source(o.text);
  const Tensor src_t = from_vector(src, {1, static_cast<int64_t>(src.size())});
  const int64_t beam = o.search.beam_for(tr);
  const float penalty = o.search.length_penalty_for(tr);
  const auto out = tr.translate_ids({o.text}, beam, penalty)[0];
  std::vector<int64_t> tgt{tr.bos};
  tgt.insert(tgt.end(), out.begin(), out.end());
  models::set_output_attentions(*tr.model, true);
  const Tensor logits =
      tr.model->forward(src_t, from_vector(tgt, {1, static_cast<int64_t>(tgt.size())}));
  const auto s = token_strings(*tr.source, src), t = token_strings(*tr.target, tgt);
  const auto next = predictions(*tr.target, logits);
  fmt::print("translation ({}): {}\n",
             beam > 1 ? fmt::format("beam {}", beam) : std::string("greedy"),
             tr.target->decode(out));
  const auto& decoder = *tr.model->decoder;
  std::vector<viz::AttentionSection> sections;
  sections.push_back(section("encoder self-attention", s, s, tr.model->encoder->attentions(),
                             tr.model->encoder->queries_keys()));
  sections.push_back(section("decoder self-attention", t, t, decoder.self_attentions(),
                             decoder.self_queries_keys()));
  sections.back().predicts = next;
  sections.back().causal = true;
  sections.push_back(section("encoder-decoder attention", t, s, decoder.cross_attentions(),
                             decoder.cross_queries_keys()));
  sections.back().predicts = next;
  return sections;
}

// A language model run's (causal) self-attention on the text.
std::vector<viz::AttentionSection> lm_sections(const AttentionOptions& o) {
  const auto generator = training::TextGenerator::load(o.checkpoint);
  auto& model = *generator.model;
  const auto& tok = generator.tokenizer;
  auto ids = tok->encode(o.text);
  if (ids.empty()) throw Error("attention: the text is empty");
  if (static_cast<int64_t>(ids.size()) > model.decoder->embeddings->max_positions)
    throw Error(fmt::format("attention: the text is {} tokens; this model reads at most {}",
                            ids.size(), model.decoder->embeddings->max_positions));
  models::set_output_attentions(model, true);
  const Tensor logits = model.forward(from_vector(ids, {1, static_cast<int64_t>(ids.size())}));
  const auto t = token_strings(*tok, ids);
  std::vector<viz::AttentionSection> sections;
  sections.push_back(section("decoder self-attention", t, t, model.decoder->self_attentions(),
                             model.decoder->self_queries_keys()));
  sections.back().predicts = predictions(*tok, logits);
  sections.back().causal = true;
  return sections;
}

int draw_attention(AttentionOptions& o) {
  resolve_inputs(o);
  NoGradGuard no_grad;
  if (!o.bert.empty()) return write_pages(o, bert_sections(o));
  training::RunDir run{o.checkpoint};
  const auto meta = run.read_run();
  const std::string kind = meta.value("kind", "");
  if (kind == "translation") return write_pages(o, translation_sections(o));
  if (kind == "lm") return write_pages(o, lm_sections(o));
  throw Error(fmt::format("attention: {} holds a {} model; translation and lm runs are supported",
                          o.checkpoint, kind.empty() ? "?" : kind));
}

}  // namespace

Runner add_attention_command(CLI::App& app) {
  auto o = std::make_shared<AttentionOptions>();
  declare_options(
      *app.add_subcommand("attention", "Write a model's attention on one input as an HTML page"),
      *o);
  return [o] { return draw_attention(*o); };
}

}  // namespace anatomy::cli
