// anatomy run: load a model by the book's parameter names (or a Hugging Face BERT checkpoint's),
// run it once in eval mode, and write what it computed. How a student checks a model against the
// book's PyTorch code, or the book's encoder against a real BERT.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>

#include "checkpoints/checkpoints.hpp"
#include "cli/commands.hpp"
#include "models/models.hpp"

namespace anatomy::cli {

std::vector<int64_t> parse_ids(const std::string& flag, const std::string& text) {
  std::vector<int64_t> ids;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    try {
      size_t used = 0;
      ids.push_back(std::stoll(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw Error(fmt::format("{}: '{}' is not an integer (expected ids like 1,2,3)", flag, item));
    }
    start = end + 1;
  }
  return ids;
}

namespace {

struct RunOptions {
  std::string model_dir, config, weights, model, input_ids, decoder_input_ids, token_type_ids,
      output;
};

void add_list(std::map<std::string, Tensor>& out, const std::string& name,
              const std::vector<Tensor>& tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) out[fmt::format("{}.{}", name, i)] = tensors[i];
}

// Hugging Face BERT weights: the config gets BERT's architecture, the names the book's. Prints
// the mapping, so that a student sees which tensor became which of the book's parameters.
nn::StateDict import_bert(const RunOptions& o, models::TransformerConfig& config,
                          const nn::StateDict& state) {
  using namespace models;
  using namespace checkpoints;
  if (o.model != "encoder")
    throw Error(fmt::format(
        "run: {} holds Hugging Face BERT names, which load into --model encoder (got '{}')",
        o.weights, o.model));
  config = bert_architecture(config, state);
  const auto imported = from_bert_checkpoint(state, config);
  fmt::print("{}: Hugging Face BERT names{}, loaded into the book's TransformerEncoder\n",
             o.weights, imported.prefix.empty() ? "" : " (prefix 'bert.')");
  fmt::print("BERT's architecture: post-LN layers, LayerNorm eps {:g}, {} ({}){}\n",
             config.layer_norm_eps, config.hidden_act,
             config.hidden_act == "gelu" ? "exact, with erf" : "as the config names it",
             config.add_pooling_layer ? ", a pooler" : "");
  size_t width = 0;
  for (const auto& [hf, book] : bert_name_map())
    width = std::max(width, imported.prefix.size() + hf.size());
  for (const auto& [hf, book] : bert_name_map())
    fmt::print("  {:{}} -> {}\n", imported.prefix + hf, width, book);
  if (config.attention_type == "fused")
    fmt::print("  (the fused attention joins the heads' q, k and v rows into attention.qkv)\n");
  if (!imported.unused.empty())
    fmt::print("not used (outside the encoder): {}\n", fmt::join(imported.unused, ", "));
  return imported.state;
}

// The encoder's outputs, as transformers' BertModel(..., output_attentions=True) returns them.
void run_encoder(models::TransformerEncoder& m, const Tensor& input, const Tensor& types,
                 std::map<std::string, Tensor>& out) {
  m.eval();
  models::set_output_attentions(m, true);  // the attentions are outputs here
  out["last_hidden_state"] = m.forward(input, Tensor(), types);
  if (m.pooler) out["pooler_output"] = m.pooler->forward(out["last_hidden_state"]);
  add_list(out, "attentions", m.attentions());
}

// What the model is built from: a BERT folder's model, or a config and its weights.
struct Source {
  std::optional<checkpoints::BertFolder> folder;
  models::TransformerConfig config;
  nn::StateDict state;
};

// Reads --model-dir, or --config and --weights; fills in --model's default for a folder.
Source load_source(RunOptions& o) {
  using namespace models;
  using namespace checkpoints;
  if (o.model_dir.empty() && (o.config.empty() || o.weights.empty()))
    throw Error(
        "run: give --model-dir DIR (a Hugging Face BERT folder), or --config and --weights");
  Source source;
  if (!o.model_dir.empty()) {
    if (o.model.empty()) o.model = "encoder";
    if (o.model != "encoder")
      throw Error(fmt::format(
          "run: --model-dir reads a Hugging Face BERT folder into --model encoder (got '{}')",
          o.model));
    source.folder = load_bert_folder(o.model_dir);
    source.config = source.folder->config;
    fmt::print("{}: {} layers, {} heads, hidden size {}\n", o.model_dir,
               source.config.num_hidden_layers, source.config.num_attention_heads,
               source.config.hidden_size);
  } else {
    if (o.model.empty()) throw Error("run: --model is required with --config and --weights");
    source.config = TransformerConfig::from_json_file(o.config);
    source.state = load_safetensors(o.weights).tensors;
    checkpoints::check_finite(source.state, o.weights);
    if (is_bert_checkpoint(source.state))
      source.state = import_bert(o, source.config, source.state);
  }
  return source;
}

// --token-type-ids as [1, T], one per input id; undefined when not given.
Tensor token_types(const RunOptions& o, const std::vector<int64_t>& ids) {
  if (o.token_type_ids.empty()) return Tensor();
  if (o.model != "encoder")
    throw Error(fmt::format("run: --token-type-ids is for --model encoder (got '{}')", o.model));
  const auto t = parse_ids("--token-type-ids", o.token_type_ids);
  if (t.size() != ids.size())
    throw Error(fmt::format("run: --token-type-ids has {} ids but --input-ids has {}", t.size(),
                            ids.size()));
  return from_vector(t, {1, static_cast<int64_t>(t.size())});
}

// The encoder and the classifier: a BERT folder's model, or one built to load the weights.
void run_encoder_models(const RunOptions& o, Source& source, const Tensor& input,
                        const Tensor& types, std::map<std::string, Tensor>& out) {
  using namespace models;
  if (source.folder) {
    run_encoder(*source.folder->model, input, types, out);
  } else if (o.model == "encoder") {
    TransformerEncoder m(source.config);
    checkpoints::load_state(m, source.state, source.config);
    run_encoder(m, input, types, out);
  } else {
    TransformerForSequenceClassification m(source.config);
    checkpoints::load_state(m, source.state, source.config);
    m.eval();
    set_output_attentions(m, true);  // the attentions are outputs here
    out["logits"] = m.forward(input);
    out["last_hidden_state"] = m.encoder->forward(input);
    add_list(out, "attentions", m.encoder->attentions());
  }
}

void run_causal_lm(const Source& source, const Tensor& input, std::map<std::string, Tensor>& out) {
  models::TransformerForCausalLM m(source.config);
  checkpoints::load_state(m, source.state, source.config);
  m.eval();
  models::set_output_attentions(m, true);  // the attentions are outputs here
  Tensor hidden = m.decoder->forward(input);
  out["last_hidden_state"] = hidden;
  out["logits"] = m.lm_head->forward(hidden);
  add_list(out, "attentions", m.decoder->self_attentions());
}

void run_seq2seq(const RunOptions& o, const Source& source, const Tensor& input,
                 std::map<std::string, Tensor>& out) {
  if (o.decoder_input_ids.empty())
    throw Error("run: --model seq2seq needs --decoder-input-ids (the target ids so far)");
  const auto dec = parse_ids("--decoder-input-ids", o.decoder_input_ids);
  models::Seq2SeqTransformer m(source.config);
  checkpoints::load_state(m, source.state, source.config);
  m.eval();
  models::set_output_attentions(m, true);  // the attentions are outputs here
  auto [memory, mask] = m.encode(input);
  Tensor hidden =
      m.decoder->forward(from_vector(dec, {1, static_cast<int64_t>(dec.size())}), memory, mask);
  out["encoder_last_hidden_state"] = memory;
  out["last_hidden_state"] = hidden;
  out["logits"] = m.generator->forward(hidden);
  add_list(out, "attentions", m.encoder->attentions());
  add_list(out, "decoder_attentions", m.decoder->self_attentions());
  add_list(out, "cross_attentions", m.decoder->cross_attentions());
}

int run(RunOptions o) {
  Source source = load_source(o);
  const auto ids = parse_ids("--input-ids", o.input_ids);
  const Tensor input = from_vector(ids, {1, static_cast<int64_t>(ids.size())});
  std::map<std::string, Tensor> out;
  NoGradGuard no_grad;
  const Tensor types = token_types(o, ids);
  // Each model below is built only to load the file's weights (strictly): no random draws.
  nn::init::SkipInitGuard skip;
  if (o.model == "encoder" || o.model == "classifier")
    run_encoder_models(o, source, input, types, out);
  else if (o.model == "causal-lm")
    run_causal_lm(source, input, out);
  else if (o.model == "seq2seq")
    run_seq2seq(o, source, input, out);
  else
    throw Error(fmt::format("run: unknown --model '{}' (encoder, classifier, causal-lm or seq2seq)",
                            o.model));
  save_safetensors(o.output, out, {{"model", o.model}});
  for (const auto& [name, t] : out) fmt::print("{:28} {}\n", name, to_string(t.shape()));
  fmt::print("wrote {}\n", o.output);
  return 0;
}

}  // namespace

Runner add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run a model once on given ids and write its outputs");
  auto* dir = cmd->add_option(
      "--model-dir", o->model_dir,
      "a Hugging Face BERT folder (config.json, model.safetensors, tokenizer.json or vocab.txt), "
      "run as the encoder");
  auto* config = cmd->add_option("--config", o->config, "Hugging Face style config.json")
                     ->check(CLI::ExistingFile);
  auto* weights =
      cmd->add_option("--weights", o->weights,
                      "weights (.safetensors): book or fused layout, or Hugging Face BERT's names")
          ->check(CLI::ExistingFile);
  dir->excludes(config)->excludes(weights);
  cmd->add_option("--model", o->model,
                  "encoder | classifier | causal-lm | seq2seq (with --model-dir: encoder)");
  cmd->add_option("--input-ids", o->input_ids, "token ids, e.g. 2051,10029,2066")->required();
  cmd->add_option("--decoder-input-ids", o->decoder_input_ids, "target ids so far (seq2seq)");
  cmd->add_option("--token-type-ids", o->token_type_ids,
                  "sentence A/B of each token, e.g. 0,0,0,1,1 (encoder; config type_vocab_size)");
  cmd->add_option("--output", o->output, "where to write the outputs (.safetensors)")->required();
  return [o] { return run(*o); };  // a copy: run fills in defaults
}

}  // namespace anatomy::cli
