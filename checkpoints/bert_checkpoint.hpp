// Hugging Face BERT checkpoints in the book's classes. A `model.safetensors` written by
// Hugging Face's BertModel (or BertForMaskedLM & co., whose names start with `bert.`) holds the
// same tensors as the chapter's TransformerEncoder under other names; this file renames them,
// splits each query/key/value matrix into the book's heads, and says which architecture
// choices BERT made (post-LN, a pooler). The model is the book's encoder, not a second family.
//
//   Hugging Face (bert. prefix optional)         the book (TransformerEncoder)
//   embeddings.word_embeddings                -> embeddings.token_embeddings
//   embeddings.position_embeddings            -> embeddings.position_embeddings
//   embeddings.token_type_embeddings          -> embeddings.token_type_embeddings
//   embeddings.LayerNorm                      -> embeddings.layer_norm
//   encoder.layer.N.attention.self.query      -> layers.N.attention.heads.h.q  (rows h*D..h*D+D)
//   encoder.layer.N.attention.self.key        -> layers.N.attention.heads.h.k
//   encoder.layer.N.attention.self.value      -> layers.N.attention.heads.h.v
//   encoder.layer.N.attention.output.dense    -> layers.N.attention.output_linear
//   encoder.layer.N.attention.output.LayerNorm-> layers.N.layer_norm_1
//   encoder.layer.N.intermediate.dense        -> layers.N.feed_forward.linear_1
//   encoder.layer.N.output.dense              -> layers.N.feed_forward.linear_2
//   encoder.layer.N.output.LayerNorm          -> layers.N.layer_norm_2
//   pooler.dense                              -> pooler.dense
//
// bert_name_map() is this table, for printing. Heads on top of BERT (`cls.*`, a classifier)
// are not part of the encoder: they are reported as unused, as Hugging Face's AutoModel does.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/config.hpp"
#include "models/transformer_encoder.hpp"
#include "nn/nn.hpp"

namespace anatomy::checkpoints {

using models::TransformerConfig;
using models::TransformerEncoder;

struct BertName {
  std::string hugging_face, book;  // module names; N stands for the layer, h for the head
};
const std::vector<BertName>& bert_name_map();

// True when the names are Hugging Face BERT's (with or without the `bert.` prefix).
bool is_bert_checkpoint(const nn::StateDict& state);

// BERT's architecture on top of a config.json's sizes: post-LN layers, a LayerNorm after the
// embeddings, no final norm, biases, the book's LayerNorm and feed-forward, and a pooler when the
// checkpoint has one. The sizes, eps, hidden_act and type_vocab_size stay the config's.
TransformerConfig bert_architecture(TransformerConfig config, const nn::StateDict& state);

struct BertImport {
  nn::StateDict state;              // the book's names, per-head attention layout
  std::vector<std::string> unused;  // names outside the encoder (cls.*, position_ids, ...)
  std::string prefix;               // "bert." or ""
};

// Renames a BERT checkpoint for a TransformerEncoder built from `config` (see
// bert_architecture). Throws anatomy::Error listing the missing and unexpected names when the
// checkpoint does not match the config (a layer count, a table, the pooler), and naming any
// tensor whose shape does not fit.
BertImport from_bert_checkpoint(const nn::StateDict& state, const TransformerConfig& config);

// The way back: the first field of `config` whose value BERT does not have, as "field is X
// (BERT: Y)"; "" when transformers' BertModel computes what the book's encoder with this config
// computes.
std::string bert_mismatch(const TransformerConfig& config);

// config.json for `architecture` (BertModel, BertForSequenceClassification with `labels` as
// id2label, ...).
nlohmann::json bert_config(const TransformerConfig& config, const std::string& architecture,
                           const std::vector<std::string>& labels = {});

// A TransformerEncoder's state_dict (per-head layout, the book's names) under Hugging Face
// BERT's names, each behind `prefix` ("bert." inside BertForSequenceClassification). Throws,
// naming the field, when bert_mismatch finds one. A model without biases gets zero ones and a
// model without token types a zero table of one row: BERT's sums are then the book's.
nn::StateDict to_bert_checkpoint(const nn::StateDict& state, const TransformerConfig& config,
                                 const std::string& prefix = "");

// A folder as Hugging Face's save_pretrained writes it: config.json, model.safetensors, and
// vocab.txt or tokenizer.json (text::load_folder_tokenizer reads the tokenizer). The model is the
// book's TransformerEncoder with BERT's architecture, in eval mode.
struct BertFolder {
  std::string dir;
  TransformerConfig config;
  std::shared_ptr<TransformerEncoder> model;
  BertImport names;  // the prefix and the unused names (state: moved into the model)
};
// Throws anatomy::Error naming the folder and what is missing or not BERT.
BertFolder load_bert_folder(const std::string& dir);

// The newest snapshot of a model in the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub or
// ~/.cache/huggingface/hub) that has config.json, model.safetensors and vocab.txt or
// tokenizer.json; "" if none.
std::string find_in_hugging_face_cache(const std::string& model = "bert-base-uncased");

// The Python packages that carry a pretrained BERT folder for offline use, as
// {package folder in site-packages, the folder inside it that holds config.json}.
struct PretrainedPackage {
  std::string package, folder;
};
const std::vector<PretrainedPackage>& pretrained_packages();

// The user's cache folder of anatomy: $ANATOMY_CACHE_DIR, else $XDG_CACHE_HOME/anatomy, else
// ~/.cache/anatomy; "" when none can be named (no HOME).
std::string anatomy_cache_dir();

// Where cmake/setup-pretrained.sh (make setup, make demo) unpacks all-MiniLM-L6-v2, a 6-layer
// BERT with bert-base-uncased's vocab.txt: <anatomy_cache_dir()>/pretrained/all-MiniLM-L6-v2.
// The folder may not exist; "" when there is no cache folder.
std::string pretrained_cache_dir();

// A pretrained BERT folder on this machine, "" if none: the one make setup put in the cache
// (pretrained_cache_dir()), else bert-base-uncased in the Hugging Face cache (the book's model),
// else a package of pretrained_packages() installed in one of `environments` (virtual
// environments' roots, e.g. the test environment build/venv), the active one ($VIRTUAL_ENV), the
// user's or the system's site-packages.
std::string find_pretrained_bert(const std::vector<std::string>& environments = {});

}  // namespace anatomy::checkpoints
