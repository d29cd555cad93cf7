// anatomy export --to-hf: a run folder as a Hugging Face model folder (config.json,
// model.safetensors) that transformers' from_pretrained loads and that computes what the run's
// model computes: a language model as GPT2LMHeadModel, a classifier whose settings are BERT's
// (a fine-tuned BERT) as BertForSequenceClassification. The names are
// checkpoints/gpt2_checkpoint.hpp's and checkpoints/bert_checkpoint.hpp's.
#include <fmt/format.h>

#include <filesystem>

#include "checkpoints/checkpoints.hpp"
#include "export/export.hpp"
#include "models/models.hpp"
#include "run_folders/run_dir.hpp"
#include "tokenizers/hugging_face_tokenizer.hpp"

namespace anatomy::training {

namespace fs = std::filesystem;

void export_to_hugging_face(const std::string& run_dir, const std::string& to) {
  RunDir run{run_dir};
  const auto meta = run.read_run();
  const std::string kind = meta.value("kind", "");
  if (kind != "lm" && kind != "classifier")
    throw Error(fmt::format(
        "export --to-hf: {} holds a {} run; a language model (as GPT-2) and a classifier with "
        "BERT's settings (as BertForSequenceClassification) have a transformers class here",
        run_dir, kind.empty() ? "?" : kind));
  if (fs::exists(to) && !fs::is_empty(to))
    throw Error(fmt::format("export --to-hf: {} exists and is not empty; choose another", to));
  const auto config = run.read_config();
  const int64_t H = config.num_attention_heads;
  nlohmann::json hf_config;
  nn::StateDict tensors;
  if (kind == "lm") {
    if (const auto field = checkpoints::gpt2_mismatch(config); !field.empty())
      throw Error(
          fmt::format("export --to-hf: {}'s {}, so no GPT-2 computes this model", run_dir, field));
    models::TransformerForCausalLM model = [&] {
      nn::init::SkipInitGuard skip;  // every parameter is loaded below
      return models::TransformerForCausalLM(config);
    }();
    checkpoints::load_weights(model, run.weights(), config);
    tensors = checkpoints::to_gpt2_checkpoint(checkpoints::to_fused_layout(model.state_dict(), H),
                                              config);
    hf_config = checkpoints::gpt2_config(config);
  } else {
    if (const auto field = checkpoints::bert_mismatch(config); !field.empty())
      throw Error(fmt::format(
          "export --to-hf: {}'s {}, so no BertForSequenceClassification computes this model "
          "(a classifier fine-tuned from a BERT folder has BERT's settings)",
          run_dir, field));
    if (!config.add_pooling_layer)
      throw Error(fmt::format(
          "export --to-hf: {}'s add_pooling_layer is false (BertForSequenceClassification "
          "classifies the pooler's output)",
          run_dir));
    models::TransformerForSequenceClassification model = [&] {
      nn::init::SkipInitGuard skip;
      return models::TransformerForSequenceClassification(config);
    }();
    checkpoints::load_weights(model, run.weights(), config);
    tensors = checkpoints::to_bert_checkpoint(
        checkpoints::to_book_layout(model.encoder->state_dict(), H), config, "bert.");
    tensors["classifier.weight"] = model.classifier->weight;
    tensors["classifier.bias"] = model.classifier->bias;
    std::vector<std::string> labels;
    if (meta.contains("labels")) labels = meta["labels"].get<std::vector<std::string>>();
    hf_config = checkpoints::bert_config(config, "BertForSequenceClassification", labels);
    hf_config["num_labels"] = config.num_labels;
  }
  write_folder_atomically(to, "export --to-hf", [&](const fs::path& dir) {
    write_file_atomically((dir / "config.json").string(), hf_config.dump(2) + "\n");
    save_safetensors((dir / "model.safetensors").string(), tensors, {{"format", "pt"}});
    if (kind == "classifier") {
      // A run that read a tokenizer.json gives it back, with the vocabulary as vocab.txt for
      // BertTokenizer (when no token holds a line break, which vocab.txt cannot); a run that read
      // a vocab.txt gives that.
      const auto tokenizer = text::load_tokenizer(run.file("tokenizer"));
      if (const auto* hf = dynamic_cast<const text::HuggingFaceTokenizer*>(tokenizer.get())) {
        write_file_atomically((dir / "tokenizer.json").string(), hf->json());
        const auto& tokens = hf->vocab().tokens();
        if (std::none_of(tokens.begin(), tokens.end(), [](const std::string& t) {
              return t.find_first_of("\n\r") != std::string::npos;
            }))
          hf->vocab().save((dir / "vocab.txt").string(), false);
      } else if (const fs::path vocab = run.file("tokenizer.vocab.txt"); fs::exists(vocab)) {
        fs::copy_file(vocab, dir / "vocab.txt");
      }
    }
  });
}

}  // namespace anatomy::training
