// Bad input, as a hostile but fair user would give it: every case exits non-zero (or throws)
// with a message that names the file or option, and none crashes. Deeply nested JSON must not
// overflow the stack (destroying or printing it recurses once per level); a numeric option out of
// range must be refused, neither replaced by a default nor used as given (--clip -1 would
// reverse the gradient).
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "helpers.hpp"
#include "inference/translator.hpp"
#include "models/models.hpp"
#include "platform/platform.hpp"
#include "tokenizers/tokenizers.hpp"
#include "training/trainer.hpp"

using namespace anatomy;
using testing::check_error;

namespace {

std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

std::string scratch(const std::string& name) {
  const auto d = anatomy::testing::temp_root() / ("anatomy_hostile_" + name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

testing::CommandResult anatomy_cli(const std::string& args) {
  return testing::run_command(std::string(ANATOMY_CLI) + " " + args);
}

}  // namespace

TEST_CASE("JSON nested 100,000 levels deep is refused, not a stack overflow") {
  const std::string deep = nested(100000);
  check_error(
      [&] { models::TransformerConfig::from_json(R"({"vocab_size": )" + deep + "}", "c.json"); },
      {"c.json", "nested deeper than 64 levels"});
  models::TransformerConfig c;
  check_error([&] { c.set("hidden_size=" + deep); }, {"--set", "nested deeper"});
  // A safetensors file whose header is deeply nested.
  const std::string dir = scratch("json");
  {
    const std::string header = R"({"x": )" + deep + "}";
    const uint64_t n = header.size();
    std::ofstream f(dir + "/deep.safetensors", std::ios::binary);
    f.write(reinterpret_cast<const char*>(&n), 8);
    f << header;
  }
  check_error([&] { load_safetensors(dir + "/deep.safetensors"); },
              {"deep.safetensors", "nested deeper"});
  // A tokenizer file that is deep, and one that is valid JSON but not an object.
  std::ofstream(dir + "/deep_tok.json") << deep;
  std::ofstream(dir + "/deep_tok.vocab.txt") << "[PAD]\n[UNK]\n";
  check_error([&] { text::load_tokenizer(dir + "/deep_tok"); }, {"deep_tok.json", "nested deeper"});
  std::ofstream(dir + "/array_tok.json") << "[1, 2]";
  std::ofstream(dir + "/array_tok.vocab.txt") << "[PAD]\n[UNK]\n";
  check_error([&] { text::load_tokenizer(dir + "/array_tok"); },
              {"array_tok.json", "must hold a JSON object", "array"});
  // Each flag must be a boolean, and kind a string (the fuzzer found raw type errors here); the
  // message shows the value that came, whole (not with its first character cut).
  const std::vector<std::pair<std::string, std::string>> fields{
      {R"("kind": "word", "lowercase": "yes")", R"((got "yes"))"},
      {R"("kind": "bert", "do_lower_case": 1)", "(got 1)"},
      {R"("kind": "word", "vocab_escaped": "no")", R"((got "no"))"},
      {R"("kind": 3)", "(got 3)"}};
  for (const auto& entry : fields) {
    const std::string& field = entry.first;  // (clang: no structured binding in CAPTURE)
    const std::string& got = entry.second;
    CAPTURE(field);
    std::ofstream(dir + "/flag_tok.json") << "{" << field << "}";
    std::ofstream(dir + "/flag_tok.vocab.txt") << "[PAD]\n[UNK]\n";
    const bool kind = field == R"("kind": 3)";
    check_error([&] { text::load_tokenizer(dir + "/flag_tok"); },
                {"flag_tok.json", kind ? "'kind' must be a string" : "must be true or false", got});
  }
  // Through the program: a run folder whose run.json is deep or not an object.
  std::filesystem::create_directories(dir + "/run");
  std::ofstream(dir + "/run/run.json") << deep;
  auto r = anatomy_cli("translate --checkpoint " + dir + "/run \"a b\"");
  CHECK(r.code == 1);
  CHECK_MESSAGE(r.output.find("nested deeper") != std::string::npos, r.output);
  std::ofstream(dir + "/run/run.json") << "[]";
  r = anatomy_cli("translate --checkpoint " + dir + "/run \"a b\"");
  CHECK(r.code == 1);
  CHECK_MESSAGE(r.output.find("run.json must hold a JSON object") != std::string::npos, r.output);
}

TEST_CASE("numeric options out of range are refused with their range, before any work") {
  const std::string out = scratch("options") + "/run";
  std::filesystem::remove_all(out);
  struct Case {
    std::string args, option;
  };
  const std::vector<Case> cases = {
      {"train --task copy --clip -1", "--clip"},
      {"train --task copy --epochs 0", "--epochs"},
      {"train --task copy --time-budget -5", "--time-budget"},
      {"train --task copy --lr -1", "--lr"},
      {"train --task copy --lr nan", "--lr"},
      {"train --task copy --lr inf", "--lr"},
      {"train --task copy --threads 0", "--threads"},
      {"train --task copy --label-smoothing 1.5", "--label-smoothing"},
      {"train --task copy --max-tokens 0", "--max-tokens"},
      {"train --task copy --warmup 0", "--warmup"},
      {"train --task copy --vocab-size 3", "--vocab-size"},
      {"train --task copy --limit 0", "--limit"},
      {"train --task copy --max-chars 0", "--max-chars"},
      {"train --task lm --iters 0", "--iters"},
      {"translate --checkpoint x --max-length 0 y", "--max-length"},
      {"translate --checkpoint x --length-penalty nan y", "--length-penalty"},
      {"generate --checkpoint x --temperature nan y", "--temperature"},
      {"generate --checkpoint x --temperature -1 y", "--temperature"},
      {"generate --checkpoint x --top-p 0 y", "--top-p"},
      {"generate --checkpoint x --top-p 1.5 y", "--top-p"},
      {"generate --checkpoint x --top-k -3 y", "--top-k"},
      {"generate --checkpoint x --max-new-tokens 0 y", "--max-new-tokens"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    auto r = anatomy_cli(c.args + (c.args.starts_with("train") ? " --out " + out : ""));
    CHECK(r.code != 0);
    CHECK(r.code < 128);  // an exit, not a signal
    CHECK_MESSAGE(r.output.find(c.option) != std::string::npos, r.output);
    CHECK_MESSAGE(r.output.find("must be a number in [") != std::string::npos, r.output);
  }
  CHECK_FALSE(std::filesystem::exists(out));
  // Each range's own ends are accepted: parsing gets past them to the unknown task.
  for (const std::string edge :
       {"--label-smoothing 0", "--label-smoothing 0.99", "--clip 0", "--warmup 1", "--max-tokens 8",
        "--epochs 1", "--iters 1", "--threads 1", "--threads 256", "--limit 1", "--max-chars 1",
        "--vocab-size 16", "--time-budget 1", "--lr 1e-12"}) {
    CAPTURE(edge);
    auto r = anatomy_cli("train --task klingon " + edge + " --out " + out);
    CHECK(r.output.find("unknown task 'klingon'") != std::string::npos);
    CHECK(r.output.find("must be a number") == std::string::npos);
  }
  // --help shows each range.
  const auto help = anatomy_cli("train --help").output;
  CHECK(help.find("--label-smoothing") != std::string::npos);
  CHECK(help.find("in [0, 0.99]") != std::string::npos);
  CHECK(help.find("in [1, 256]") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("a run folder's stale temporary files (a save killed halfway) are removed on resume" *
          doctest::test_suite("end-to-end")) {
  const std::string dir = scratch("stale") + "/run";
  auto r = anatomy_cli("train --task copy --epochs 1 --preset tiny --limit 300 --out " + dir);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  std::ofstream(dir + "/last/model.safetensors.tmp4242") << "half a file";
  std::ofstream(dir + "/run.json.tmp17") << "{";
  // Not a save's leftover (those end in .tmp and the saving process's id): the user's.
  std::ofstream(dir + "/notes.tmp.txt") << "not ours";
  std::ofstream(dir + "/notes.tmp") << "not ours";
  r = anatomy_cli("train --task copy --epochs 2 --resume --out " + dir);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK_FALSE(std::filesystem::exists(dir + "/last/model.safetensors.tmp4242"));
  CHECK_FALSE(std::filesystem::exists(dir + "/run.json.tmp17"));
  CHECK(std::filesystem::exists(dir + "/notes.tmp.txt"));
  CHECK(std::filesystem::exists(dir + "/notes.tmp"));
}

// A run stopped before its first checkpoint has a folder and nothing to resume from: --resume
// starts it again from the seed's weights, and says so instead of claiming to resume.
TEST_CASE("--resume on a run with no checkpoint yet starts from the beginning, and says so" *
          doctest::test_suite("end-to-end")) {
  const std::string dir = scratch("no_checkpoint") + "/run";
  auto r = anatomy_cli("train --task copy --epochs 1 --preset tiny --limit 300 --out " + dir);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  r = anatomy_cli("train --task copy --epochs 2 --resume --out " + dir);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK_MESSAGE(r.output.find("resuming " + dir + " at epoch 2, batch 0") != std::string::npos,
                r.output);
  std::filesystem::remove(dir + "/last/training.safetensors");
  r = anatomy_cli("train --task copy --epochs 1 --resume --out " + dir);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK_MESSAGE(r.output.find(dir + " has no checkpoint yet: starting from the beginning") !=
                    std::string::npos,
                r.output);
  CHECK(r.output.find("resuming") == std::string::npos);
}

TEST_CASE("a safetensors shape whose size overflows int64 is refused by name") {
  const std::string dir = scratch("overflow");
  const std::string header =
      R"({"w": {"dtype": "F32", "shape": [1099511627776, 1099511627776, 16], "data_offsets": [0, 0]}})";
  const uint64_t n = header.size();
  std::ofstream f(dir + "/huge.safetensors", std::ios::binary);
  f.write(reinterpret_cast<const char*>(&n), 8);
  f << header;
  f.close();
  check_error([&] { load_safetensors(dir + "/huge.safetensors"); },
              {"huge.safetensors", "'w'", "larger than any file can hold"});
}

TEST_CASE("BPE encodes a pathological 200,000-character word in linear time, losslessly") {
  auto bpe = text::BpeTokenizer::train({"the cat sat on the mat", "abab abab abba"}, 60);
  std::string word;
  for (int i = 0; i < 100000; ++i) word += "ab";
  const auto start = std::chrono::steady_clock::now();
  const auto ids = bpe.encode("the " + word + " cat");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Quadratic merging took minutes at this length; through a queue of ranked pairs it takes well
  // under a second (the bound is loose: sanitizers and a loaded machine are slow, not quadratic).
  CHECK_MESSAGE(seconds < 20.0, seconds);
  CHECK(bpe.decode(ids) == "the " + word + " cat");
}

TEST_CASE("bad configs, folders and checkpoint metadata are refused by name" *
          doctest::test_suite("end-to-end")) {
  const std::string dir = scratch("folders");
  struct Case {
    std::string args, fragment;
  };
  const std::vector<Case> cases = {
      {"train --task copy --set hidden_size=-5 --out " + dir + "/a",
       "hidden_size must be positive"},
      {"train --task copy --set num_attention_heads=5 --out " + dir + "/a",
       "hidden_size (64) must be divisible by num_attention_heads (5)"},
      {"train --task copy --config /nonexistent.json --out " + dir + "/a", "cannot open"},
      {"train --task copy --resume --out " + dir + "/none", "not a training run folder"},
      {"export --checkpoint " + dir + "/none --to " + dir + "/x", "not a training run folder"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    auto r = anatomy_cli(c.args);
    CHECK(r.code == 1);
    CHECK_MESSAGE(r.output.find(c.fragment) != std::string::npos, r.output);
  }
  CHECK_FALSE(std::filesystem::exists(dir + "/a"));
  // A translation run is not a language model, and its checkpoint's position must make sense.
  const std::string run = dir + "/copy";
  auto t = anatomy_cli("train --task copy --epochs 1 --preset tiny --limit 300 --out " + run);
  REQUIRE_MESSAGE(t.code == 0, t.output);
  auto g = anatomy_cli("generate --checkpoint " + run + " \"a b\"");
  CHECK(g.code == 1);
  CHECK_MESSAGE(g.output.find("holds a translation run, not a lm run") != std::string::npos,
                g.output);
  const std::string state = run + "/last/training.safetensors";
  auto file = load_safetensors(state);
  file.metadata["batch"] = "-3";
  save_safetensors(state, file.tensors, file.metadata);
  auto r = anatomy_cli("train --task copy --epochs 2 --resume --out " + run);
  CHECK(r.code == 1);
  CHECK_MESSAGE(r.output.find("'batch' must be an integer >= 0 (got '-3')") != std::string::npos,
                r.output);
  file.metadata["batch"] = "0";
  file.metadata["epoch"] = "many";
  save_safetensors(state, file.tensors, file.metadata);
  r = anatomy_cli("train --task copy --epochs 2 --resume --out " + run);
  CHECK(r.code == 1);
  CHECK_MESSAGE(r.output.find("'epoch' must be an integer >= 0 (got 'many')") != std::string::npos,
                r.output);
}

TEST_CASE("DetectAnomaly names the op, forward or backward, and the nearest parameter") {
  // Off: NaN passes silently, as in PyTorch without detect_anomaly.
  Tensor x = tensor({-1.0f, 4.0f}).requires_grad_();
  CHECK(std::isnan(sqrt(x).to_vector()[0]));
  {
    DetectAnomaly guard;
    check_error([&] { sqrt(x); },
                {"detect_anomaly", "the output of Sqrt (SqrtBackward0)", "NaN", "element 0"});
    // Forward fine (sqrt(0) = 0), backward not: d sqrt(x)/dx = 1 / (2 sqrt(x)) is Inf at 0.
    Tensor z = tensor({0.0f, 4.0f}).requires_grad_();
    Tensor y = sqrt(z).sum();
    check_error([&] { y.backward(); },
                {"the gradient that SqrtBackward0 computed for its input 0", "holds Inf"});
    // A mask's -Inf is no anomaly: softmax gives the hidden position a weight of exactly 0, and
    // the gradients stay finite.
    Tensor scores = tensor({0.5f, -1.0f, 2.0f}).requires_grad_();
    Tensor weights = softmax(masked_fill(scores, tensor({0.0f, 1.0f, 0.0f}), -INFINITY), -1);
    const std::vector<float> w = weights.to_vector();
    CHECK(w[1] == 0.0f);
    CHECK(w[0] == doctest::Approx(1.0 / (1.0 + std::exp(1.5))).epsilon(1e-5));
    mul(weights, tensor({1.0f, 2.0f, 3.0f})).sum().backward();
    CHECK(scores.grad().to_vector()[1] == 0.0f);
    // +Inf in an output is still refused, and so is -Inf in a gradient: -sqrt(0) = 0 is fine
    // forward, but its gradient, -1 / (2 sqrt(x)), is -Inf at 0.
    check_error(
        [&] {
          exp(tensor({1.0f, 100.0f}));
        },
        {"the output of Exp (ExpBackward0)", "holds Inf", "element 1"});
    Tensor u = tensor({0.0f, 1.0f}).requires_grad_();
    Tensor loss = mul(sqrt(u), -1.0f).sum();
    check_error(
        [&] { loss.backward(); },
        {"the gradient that SqrtBackward0 computed for its input 0", "holds -Inf", "element 0"});
  }
  // With a model's names: the parameter that feeds the bad op.
  nn::Sequential net;
  net.push_back(std::make_shared<nn::Linear>(3, 4));
  net.push_back(std::make_shared<nn::ReLU>());
  net.push_back(std::make_shared<nn::Linear>(4, 2));
  {
    NoGradGuard no_grad;
    net.at<nn::Linear>(2)->weight.select(0, 1).fill_(INFINITY);
  }
  DetectAnomaly guard(net.named_parameters());
  check_error(
      [&] {
        net.forward(ones({1, 3}));
      },
      {"detect_anomaly", "the output of Addmm (AddmmBackward0)",
       "the nearest parameter feeding it is 2.weight"});
}

TEST_CASE("train --detect-anomaly names where a diverging run first made NaN or Inf") {
  const std::string dir = scratch("anomaly") + "/run";
  auto r = anatomy_cli(
      "train --task copy --epochs 1 --preset tiny --limit 300 --lr 1e30 "
      "--detect-anomaly --out " +
      dir);
  CHECK(r.code == 1);
  CHECK_MESSAGE(r.output.find("detect_anomaly: ") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("the nearest parameter feeding it is ") != std::string::npos,
                r.output);
  // Runs that stay finite train through to the end with the checks on, masks and all (CI runs
  // this on the reference kernels too, whose attention writes the masks' -Inf into its scores).
  // The language model's evaluations run on one thread then, as its training steps do.
  const std::string text = scratch("anomaly_text") + ".txt";
  {
    std::ofstream f(text);
    for (int i = 0; i < 100; ++i) f << "Whether 'tis nobler in the mind to suffer\n";
  }
  auto lm = anatomy_cli("train --task lm --preset tiny --iters 2 --threads 2 --detect-anomaly " +
                        std::string("--text ") + text + " --out " + scratch("anomaly_lm") + "/run");
  CHECK_MESSAGE(lm.code == 0, lm.output);
  CHECK_MESSAGE(lm.output.find("step 2/2  train loss ") != std::string::npos, lm.output);
  auto copy = anatomy_cli(
      "train --task copy --preset tiny --limit 64 --epochs 1 --threads 2 --detect-anomaly --out " +
      scratch("anomaly_copy") + "/run");
  CHECK_MESSAGE(copy.code == 0, copy.output);
  CHECK_MESSAGE(copy.output.find("epoch 1/1  train loss ") != std::string::npos, copy.output);
}

TEST_CASE("run.json is checked field by field before a resume trusts it") {
  const std::string dir = scratch("run_json");
  const training::RunDir run{dir};
  auto refused = [&](const std::string& json, const std::string& fragment) {
    CAPTURE(json);
    std::ofstream(dir + "/run.json") << json;
    check_error([&] { (void)training::read_history(run.read_run()); }, {fragment});
  };
  refused(R"({"options": {"clip": -1}})",
          "run.json: 'options.clip' is -1 (expected a number in [0, 1e+06])");
  refused(R"({"options": {"lr": "fast"}})", "'options.lr' is \"fast\" (expected a number");
  refused(R"({"decoding": {"beam": 0, "length_penalty": 0.6}})", "'decoding.beam' is 0");
  refused(R"({"decoding": {"beam": 4, "length_penalty": -1}})", "'decoding.length_penalty' is -1");
  refused(R"({"decoding": {"beam": 4}})", "'decoding.length_penalty' is missing");
  refused(R"({"options": {"time_budget": -5}})", "'options.time_budget' is -5");
  refused(R"({"plan": {"size": 3}})", "'plan.size' is 3 (expected a string)");
  refused(R"({"plan": {"measured": {"small": "fast"}}})", "'plan.measured.small' is \"fast\"");
  refused(R"({"plan": [1]})", "'plan' is [1] (expected an object)");
  refused(R"({"options": [1, 2]})", "'options' is [1,2] (expected an object)");
  refused(R"({"seed": -4})", "'seed' is -4 (expected an integer in [0, 1.84467e+19])");
  refused(R"({"kind": 3})", "'kind' is 3 (expected a string)");
  refused(R"({"data": {"max_chars": 1.5}})", "'data.max_chars' is 1.5 (expected an integer");
  refused(R"({"best": {"valid_loss": null}})", "'best.valid_loss' is null (expected a number");
  refused(R"({"history": [{"step": "ten"}]})", "'history[0].step' is \"ten\" (expected an integer");
  refused(R"({"history": [7]})", "'history[0]' is 7 (expected an object)");
  refused(R"({"history": [{"step": 4, "bleu": null}]})", "'history[0].bleu' is null");
  // A metric read back as a number may not be a flag (the fuzzer found a raw type_error).
  refused(R"({"history": [{"epoch": 1, "step": 10, "valid_loss": true}]})",
          "'history[0].valid_loss' is true (expected a number");
  refused(R"({"best": {"bleu": false}})", "'best.bleu' is false (expected a number");
  refused(R"({"curve": [[1, 2.0]]})", "'curve[0]' is [1,2.0] (expected [step, loss, lr])");
  refused(R"({"curve": [[1e300, 2.0, 0.1]]})", "'curve[0][0]' is 1e+300 (expected an integer");
  refused(R"({"curve": [[1, "low", 0.1]]})", "'curve[0][1]' is \"low\" (expected a number");
  refused(R"({"curve": [[1, 2.0, [0.1]]]})", "'curve[0][2]' is [0.1] (expected a number");
  // A value is shown whole up to 40 characters, and longer ones by their first 40.
  refused(R"({"kind": [1111111111, 1111111111, 1111111111, 11111]})",
          "'kind' is [1111111111,1111111111,1111111111,11111] (expected a string)");
  refused(R"({"kind": [1111111111, 1111111111, 1111111111, 111111]})",
          "'kind' is [1111111111,1111111111,1111111111,111111... (expected a string)");
  // What passes comes back whole, including the null train_loss of a history line written
  // with no batch trained since the line before (an interrupt right after an evaluation).
  std::ofstream(dir + "/run.json")
      << R"({"best": {"valid_loss": 1.5}, "history": [{"step": 4, "valid_loss": 1.5, "bleu": 2,
             "complete": true}, {"step": 4, "train_loss": null, "valid_loss": 1.5,
             "complete": false}], "curve": [[2, 3.5, 0.01], [4, 2.5, 0.02]]})";
  const auto h = training::read_history(run.read_run());
  CHECK(h.best["valid_loss"].get<double>() == 1.5);
  REQUIRE(h.curve.train.size() == 2);
  CHECK(h.curve.train[1].step == 4);
  CHECK(h.curve.train[1].train_loss == 2.5);
  REQUIRE(h.curve.eval.size() == 2);
  REQUIRE(h.curve.eval[0].metrics.size() == 1);  // bleu; complete is a flag, not a metric
  CHECK(h.curve.eval[0].metrics[0].first == "bleu");
  CHECK(h.curve.eval[0].metrics[0].second == 2);
  CHECK(h.curve.eval[1].metrics.empty());
  // Every option at the bottom of its range passes: 0 is "the preset's" (or "none") for each,
  // as on the command line, and a resume must take it back.
  std::ofstream(dir + "/run.json")
      << R"({"options": {"lr": 0, "warmup": 0, "max_tokens": 0, "label_smoothing": 0, "clip": 0,
             "limit": 0, "early_stop": false, "select": "loss", "average": 0,
             "time_budget": 0}})";
  CHECK_NOTHROW((void)run.read_run());
}

// A run folder says what is wrong with it: not a run, not JSON, a run already there, no weights
// yet; and the weights a folder gives are the best model's, else the last one's.
TEST_CASE("a run folder names what it lacks, and gives the best weights before the last") {
  const std::string dir = scratch("run_folder");
  const training::RunDir run{dir};
  check_error([&] { (void)run.read_run(); },
              {dir + " is not a training run folder (no run.json)", "anatomy train --out " + dir});
  std::ofstream(dir + "/run.json") << "{\"kind\": ";
  check_error([&] { (void)run.read_run(); }, {dir + ": run.json is not valid JSON"});
  std::ofstream(dir + "/run.json") << R"({"kind": "lm"})";
  check_error([&] { (void)run.create(); }, {dir + " already holds a training run; pass --resume"});
  check_error([&] { (void)run.start(false, "lm"); },
              {dir + " already holds a training run; pass --resume"});
  CHECK(run.start(true, "lm")["kind"] == "lm");
  check_error([&] { (void)run.weights(); }, {dir + " holds no weights yet"});
  std::filesystem::create_directories(dir + "/last");
  std::ofstream(dir + "/last/model.safetensors") << "x";
  CHECK(run.weights() == dir + "/last/model.safetensors");
  std::filesystem::create_directories(dir + "/best");
  std::ofstream(dir + "/best/model.safetensors") << "x";
  CHECK(run.weights() == dir + "/best/model.safetensors");
  // Locked by a training that has not written its pid yet (it writes it after taking the lock):
  // the message has no pid to give.
  const int held = ::open((dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(held >= 0);
  REQUIRE(platform::try_lock_file(held));
  check_error([&] { (void)run.lock(); }, {dir + " is in use by another training (pid ?)"});
  ::close(held);
}

// Every numeric field of run.json is accepted at each end of its range and refused just past it,
// by name: a bound that drifted would refuse a run that trained, or let in a value training
// then trusts (a beam of 0, a negative step).
TEST_CASE("run.json's numbers are taken at each end of their ranges and refused past them") {
  const std::string dir = scratch("run_json_ranges");
  const training::RunDir run{dir};
  struct Range {
    std::string name;                                     // as the error names it
    std::function<std::string(const std::string&)> json;  // run.json with the value in place
    bool integer;
    double min, max;
  };
  auto top = [](const std::string& key) {
    return [key](const std::string& v) { return fmt::format(R"({{"{}": {}}})", key, v); };
  };
  auto in = [](const std::string& object, const std::string& key, const std::string& beside = "") {
    return [=](const std::string& v) {
      return fmt::format(R"({{"{}": {{"{}": {}{}}}}})", object, key, v, beside);
    };
  };
  const std::string both = R"(, "beam": 4, "length_penalty": 0.6)";
  const double max_int = 9.0e15;
  const std::vector<Range> ranges = {
      {"epochs", top("epochs"), true, 0, 1e6},
      {"iters", top("iters"), true, 0, 1e9},
      {"step", top("step"), true, 0, max_int},
      {"seconds", top("seconds"), false, 0, 1e12},
      {"seed", top("seed"), true, 0, NAN},  // its top is 2^64 - 1, past which JSON has no integer
      {"data.max_chars", in("data", "max_chars"), true, 0, 1e9},
      {"decoding.beam", in("decoding", "beam", R"(, "length_penalty": 0.6)"), true, 1, 1000},
      {"decoding.length_penalty", in("decoding", "length_penalty", R"(, "beam": 4)"), false, 0, 10},
      {"decoding.pairs", in("decoding", "pairs", both), true, 0, 1e9},
      {"decoding.greedy_bleu", in("decoding", "greedy_bleu", both), false, 0, 100},
      {"decoding.beam_bleu", in("decoding", "beam_bleu", both), false, 0, 100},
      {"options.lr", in("options", "lr"), false, 0, 1e30},
      {"options.warmup", in("options", "warmup"), true, 0, 1e9},
      {"options.max_tokens", in("options", "max_tokens"), true, 0, 1e7},
      {"options.label_smoothing", in("options", "label_smoothing"), false, 0, 0.99},
      {"options.clip", in("options", "clip"), false, 0, 1e6},
      {"options.limit", in("options", "limit"), true, 0, 1e9},
      {"options.average", in("options", "average"), true, 0, 1e6},
      {"options.time_budget", in("options", "time_budget"), false, 0, 1e9},
      {"plan.threads", in("plan", "threads"), true, 1, 1e6},
      {"plan.tokens_per_second", in("plan", "tokens_per_second"), false, 0, 1e15},
      {"plan.epoch_overhead", in("plan", "epoch_overhead"), false, 0, 1e12},
      {"plan.measure_seconds", in("plan", "measure_seconds"), false, 0, 1e12},
      {"plan.time_budget", in("plan", "time_budget"), false, 0, 1e12},
      {"plan.epochs", in("plan", "epochs"), false, 0, 1e12},
      {"plan.steps_per_epoch", in("plan", "steps_per_epoch"), true, 0, max_int},
      {"plan.measured.small",
       [](const std::string& v) { return R"({"plan": {"measured": {"small": )" + v + "}}}"; },
       false, 0, 1e15},
      {"history[0].step",
       [](const std::string& v) { return R"({"history": [{"step": )" + v + "}]}"; }, true, 0,
       max_int},
      {"history[0].epoch",
       [](const std::string& v) { return R"({"history": [{"epoch": )" + v + "}]}"; }, true, 0,
       max_int},
      {"curve[0][0]", [](const std::string& v) { return R"({"curve": [[)" + v + ", 2.0, 0.1]]}"; },
       true, 0, max_int},
      {"best.valid_loss", in("best", "valid_loss"), false, -1e300, 1e300},
      {"curve[0][2]", [](const std::string& v) { return R"({"curve": [[1, 2.0, )" + v + "]]}"; },
       false, -1e300, 1e300},
  };
  auto text = [](bool integer, double v) {
    return integer ? fmt::format("{}", static_cast<int64_t>(v)) : fmt::format("{}", v);
  };
  for (const Range& r : ranges) {
    CAPTURE(r.name);
    const double below = r.min - std::max(1.0, std::abs(r.min) * 0.1);
    std::vector<std::pair<double, bool>> values = {{r.min, true}, {below, false}};
    if (!std::isnan(r.max))
      values.insert(values.end(), {{r.max, true}, {r.max + std::max(1.0, r.max * 0.1), false}});
    for (const auto& [value, taken] : values) {
      const std::string json = r.json(text(r.integer, value));
      CAPTURE(json);
      std::ofstream(dir + "/run.json") << json;
      if (taken)
        CHECK_NOTHROW((void)training::read_history(run.read_run()));
      else
        check_error([&] { (void)training::read_history(run.read_run()); },
                    {fmt::format("'{}' is {}", r.name, text(r.integer, value))});
    }
  }
}

// A resumed run's best comes from run.json, checked for the types of its metrics but not for
// which are there: a best without the metric the choice compares counts as the worst, where
// reading it was undefined (nlohmann's operator[] on a missing key of a const object).
TEST_CASE("choosing the best evaluation does not need every metric in run.json's best") {
  const training::Metrics full{{"valid_loss", 1.0}, {"bleu", 20.0}, {"exact_match", 5.0}};
  const training::Metrics partial{{"bleu", 30.0}};
  CHECK(training::better_by("loss")(full, partial));
  CHECK_FALSE(training::better_by("loss")(partial, full));
  CHECK(training::better_by("bleu")(partial, full));  // 30 > 20
  CHECK_FALSE(training::better_by("bleu")(full, partial));
  CHECK(training::better_by("exact_match")(full, partial));  // 5 against none
  CHECK_FALSE(training::better_by("exact_match")(partial, full));
  // Ties fall through to the next metric, as before.
  const training::Metrics lower_loss{{"valid_loss", 0.5}, {"bleu", 20.0}, {"exact_match", 5.0}};
  CHECK(training::better_by("bleu")(lower_loss, full));
  CHECK(training::better_by("exact_match")(lower_loss, full));
  CHECK_FALSE(training::better_by("exact_match")(full, lower_loss));
}

TEST_CASE("a training state's position must be a whole number >= 0") {
  auto position = [](const std::string& epoch, const std::string& batch) {
    return training::read_position({12, {{"epoch", epoch}, {"batch", batch}}}, "t.safetensors");
  };
  CHECK(position("3", "40").epoch == 3);
  CHECK(position("3", "40").batch == 40);
  check_error([&] { position("3x", "0"); }, {"'epoch' must be an integer >= 0 (got '3x')"});
  check_error([&] { position("1", "99999999999999999999"); },
              {"'batch' must be an integer >= 0 (got '99999999999999999999')"});
  check_error(
      [&] {
        training::read_position({12, {{"epoch", "1"}}}, "t.safetensors");
      },
      {"'batch' must be an integer >= 0 (got 'nothing')"});
  // Checkpoints from before the epoch/batch metadata: the step is the batch.
  CHECK(training::read_position({12, {}}, "t.safetensors").batch == 12);
}

// Sizes that are each valid but together more than the machine holds are refused from the config,
// before a tensor is allocated: under a 4 GB address-space cap (ulimit -v) the refusal, not
// std::bad_alloc or the kernel's OOM killer, must be what happens.
TEST_CASE("a config too large for memory is refused by its sizes, before anything is allocated" *
          doctest::test_suite("end-to-end")) {
  const std::string dir = scratch("memory");
  const std::string run = dir + "/copy";
  auto t = anatomy_cli("train --task copy --epochs 1 --preset tiny --limit 200 --out " + run);
  REQUIRE_MESSAGE(t.code == 0, t.output);
  const std::string config_path = run + "/config.json";
  std::string config;
  {
    std::ifstream f(config_path);
    config.assign(std::istreambuf_iterator<char>(f), {});
  }
  const auto capped = [&](const std::string& args) {
    return testing::run_command("bash -c 'ulimit -v 4194304; " + std::string(ANATOMY_CLI) + " " +
                                args + "'");
  };
  struct Case {
    std::string field, value, names;
  };
  const std::vector<Case> cases = {
      {"num_hidden_layers", "1000000000", "num_hidden_layers 1000000000"},
      {"hidden_size", "4000000", "hidden_size 4000000"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.field);
    auto j = nlohmann::json::parse(config);
    j[c.field] = std::stoll(c.value);
    if (c.field == "hidden_size") j["num_attention_heads"] = 4;
    std::ofstream(config_path) << j.dump();
    for (const std::string& command :
         {"translate --checkpoint " + run + " \"a b\"", "evaluate --checkpoint " + run}) {
      CAPTURE(command);
      const auto r = capped(command);
      CHECK(r.code == 1);
      CHECK_MESSAGE(r.output.find(c.names) != std::string::npos, r.output);
      CHECK_MESSAGE(r.output.find("of memory a model may take here") != std::string::npos,
                    r.output);
      CHECK(r.output.find("bad_alloc") == std::string::npos);
    }
  }
  // --max-memory sets the limit: the tiny model (well under 1 MB) runs within 0.001 GB; the same
  // model with 300 layers (tens of MB) is refused within 0.01 GB.
  std::ofstream(config_path) << config;
  const auto fits = anatomy_cli("translate --max-memory 0.001 --checkpoint " + run + " \"a b\"");
  CHECK_MESSAGE(fits.code == 0, fits.output);
  auto deep = nlohmann::json::parse(config);
  deep["num_hidden_layers"] = 300;
  std::ofstream(config_path) << deep.dump();
  const auto tight = anatomy_cli("translate --max-memory 0.01 --checkpoint " + run + " \"a b\"");
  CHECK(tight.code == 1);
  CHECK_MESSAGE(tight.output.find("num_hidden_layers 300") != std::string::npos, tight.output);
  CHECK_MESSAGE(tight.output.find("more than the 10.2 MB of memory a model may take here") !=
                    std::string::npos,
                tight.output);
  std::ofstream(config_path) << config;
  // A beam beyond its documented bound is refused before the model is read.
  const auto beam = anatomy_cli("translate --beam 1000000 --checkpoint " + run + " \"a b\"");
  CHECK(beam.code != 0);
  CHECK_MESSAGE(beam.output.find("--beam") != std::string::npos, beam.output);
  // Within its bound a beam still costs memory: the hypotheses' cached keys and values are
  // estimated before decoding. 1000 of them do not fit in 0.01 GB with this model; one does.
  const auto wide =
      anatomy_cli("translate --beam 1000 --max-memory 0.01 --checkpoint " + run + " \"a b\"");
  CHECK(wide.code == 1);
  CHECK_MESSAGE(
      wide.output.find("to decode 1000 hypotheses at once (beam 1000)") != std::string::npos,
      wide.output);
  CHECK_MESSAGE(wide.output.find("lower --beam or --max-length") != std::string::npos, wide.output);
  const auto narrow =
      anatomy_cli("translate --beam 1 --max-memory 0.01 --checkpoint " + run + " \"a b\"");
  CHECK_MESSAGE(narrow.code == 0, narrow.output);
}

// Training takes the weights four times over (weights, gradients, AdamW's two moments) and the
// activations of a batch: estimated from the config and the batch and refused, naming the batch
// option, before the run folder is made. Under an address-space cap (ulimit -v) the cap is the
// limit, so the refusal comes instead of std::bad_alloc.
TEST_CASE("training that cannot fit is refused from the config and the batch, before any run" *
          doctest::test_suite("end-to-end")) {
  namespace fs = std::filesystem;
  const std::string dir = scratch("training_memory");
  const std::string copy = "train --task copy --epochs 1 --preset tiny --limit 200 ";
  auto big = anatomy_cli(copy + "--max-tokens 10000000 --max-memory 1 --out " + dir + "/big");
  CHECK(big.code == 1);
  CHECK_MESSAGE(big.output.find("of activations for 10000000 tokens a batch (--max-tokens)") !=
                    std::string::npos,
                big.output);
  CHECK_MESSAGE(big.output.find("more than the 1.0 GB a run may take here") != std::string::npos,
                big.output);
  CHECK_FALSE(fs::exists(dir + "/big"));
  // Under a 4 GB cap on the address space the cap is the limit, with no --max-memory.
  const auto capped =
      testing::run_command("bash -c 'ulimit -v 4194304; " + std::string(ANATOMY_CLI) + " " + copy +
                           "--max-tokens 10000000 --out " + dir + "/capped'");
  CHECK(capped.code == 1);
  CHECK_MESSAGE(capped.output.find("more than the 4.0 GB a run may take here") != std::string::npos,
                capped.output);
  CHECK(capped.output.find("bad_alloc") == std::string::npos);
  // The same run with its own batch fits in 1 GB and trains.
  auto fits = anatomy_cli(copy + "--max-memory 1 --out " + dir + "/fits");
  CHECK_MESSAGE(fits.code == 0, fits.output);
  // A language model's batch is its windows: longer windows are refused by that field.
  const std::string text = dir + "/text.txt";
  {
    std::ofstream f(text);
    for (int i = 0; i < 50; ++i) f << "to be or not to be, that is the question.\n";
  }
  auto lm =
      anatomy_cli("train --task lm --preset tiny --iters 1 --text " + text +
                  " --set max_position_embeddings=200000 --max-memory 1 --out " + dir + "/lm");
  CHECK(lm.code == 1);
  CHECK_MESSAGE(lm.output.find("windows of max_position_embeddings 200000") != std::string::npos,
                lm.output);
  CHECK_FALSE(fs::exists(dir + "/lm"));
  // The majority classifier's batch is 32 texts of up to its 32 positions: 1024 tokens.
  auto majority = anatomy_cli("train --task majority --max-memory 0.001 --out " + dir + "/major");
  CHECK(majority.code == 1);
  CHECK_MESSAGE(majority.output.find("of activations for 1024 tokens a batch (the batch: 32 texts "
                                     "of up to max_position_embeddings tokens) in sequences of "
                                     "up to 32") != std::string::npos,
                majority.output);
  CHECK_FALSE(fs::exists(dir + "/major"));
}
