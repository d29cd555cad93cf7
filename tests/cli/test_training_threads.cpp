// The trainer end to end, continued: the language model, two threads against one, --config and
// --set, one training per folder, and kill -9 at any moment.
#include <fcntl.h>

#include "platform/platform.hpp"
#include "training/trainer.hpp"
#include "training/training_fixtures.hpp"

using namespace anatomy;
using namespace anatomy::testing;

// The data-parallel step's NLL is the parts' NLLs weighted by their target tokens. The rows here
// carry their own token counts and NLLs: counts 1, 1, 1, 9 and NLLs 1, 1, 1, 5 give 4 per token
// (48 / 12). Two threads split them into rows 0-1 (2 tokens, NLL 1) and rows 2-3 (10 tokens,
// NLL 4.6); the unweighted mean of the parts would be 2.8. One thread and two must both report 4.
TEST_CASE("the data-parallel NLL is weighted by target tokens, and equals one thread's") {
  const int saved_threads = get_num_threads();
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    set_num_threads(threads);
    testing::TempDir dir;
    nn::Linear model(1, 1);
    nn::SGD optimizer(model.parameters(), {.lr = 0.0});
    training::Trainer trainer(model, optimizer, nullptr,
                              {.epochs = 1, .run_dir = dir.str(), .quiet = true});
    trainer.batches = [](int64_t) { return int64_t{1}; };
    trainer.batch = [](int64_t, int64_t) {
      // Each row: its target tokens (input) and their mean NLL (labels).
      return training::Batch{.input = from_vector(std::vector<float>{1, 1, 1, 9}, {4}),
                             .labels = from_vector(std::vector<float>{1, 1, 1, 5}, {4})};
    };
    trainer.batch_loss = [](nn::Module& m, const training::Batch& part) {
      const Tensor counts = part.input.contiguous(), nlls = part.labels.contiguous();
      double tokens = 0, nll = 0;
      for (int64_t i = 0; i < counts.numel(); ++i) {
        tokens += counts.data()[i];
        nll += static_cast<double>(counts.data()[i]) * nlls.data()[i];
      }
      // A loss with a gradient path through the model, whose value is the part's mean NLL.
      const Tensor w = dynamic_cast<nn::Linear&>(m).weight;
      const Tensor loss =
          add(mul(w.sum(), full({}, 0.0f)), full({}, static_cast<float>(nll / tokens)));
      return training::BatchLoss{loss, static_cast<int64_t>(tokens), nll / tokens};
    };
    trainer.replicate = [] { return std::make_shared<nn::Linear>(1, 1); };
    trainer.evaluate = [](bool) { return training::Metrics{{"valid_loss", 0.0}}; };
    trainer.fit();
    const auto run = nlohmann::json::parse(bytes(dir / "run.json"));
    REQUIRE(run["history"].size() == 1);
    CHECK(run["history"][0]["train_nll"].get<double>() == doctest::Approx(4.0).epsilon(1e-6));
    CHECK(run["history"][0]["train_loss"].get<double>() == doctest::Approx(4.0).epsilon(1e-6));
  }
  set_num_threads(saved_threads);
}

// These train through the `anatomy` command: label end-to-end (the sanitizer run skips them).
TEST_SUITE_BEGIN("end-to-end");

// The character language model: a text with line breaks trains, its checkpoint generates, and a
// run interrupted by Ctrl-C resumes to exactly the weights of an uninterrupted run.
TEST_CASE("language model: trains on a text, generates, and resumes after Ctrl-C bit for bit") {
  const std::string text = lm_text("lm_text");
  const std::string whole = fresh_dir("lm_whole"), cut = fresh_dir("lm_cut");
  // --lr and --warmup are not repeated on --resume: the run keeps its own.
  const std::string args =
      " --preset tiny --iters 400 --lr 3e-3 --warmup 20 --threads 1 --text " + text;
  auto a = run("train --task lm --out " + whole + args);
  REQUIRE_MESSAGE(a.code == 0, a.output);
  std::ifstream meta_file(whole + "/run.json");
  const auto meta = nlohmann::json::parse(meta_file);
  const auto& curve = meta["curve"];
  REQUIRE(curve.size() > 10);
  CHECK(curve.back()[1].get<double>() < 0.5 * curve.front()[1].get<double>());  // the loss falls
  CHECK(meta["best"]["valid_loss"].get<double>() < 1.0);

  // The checkpoint loads (its vocabulary holds "\n" and "\r") and continues a prompt.
  auto g = run("generate --checkpoint " + whole + " --max-new-tokens 100 \"To be\"");
  REQUIRE_MESSAGE(g.code == 0, g.output);
  CHECK(g.output.starts_with("To be"));
  CHECK(g.output.size() > 60);
  auto greedy = run("generate --checkpoint " + whole + " --temperature 0 \"Or to take arms\"");
  CHECK_MESSAGE(greedy.output.find("Or to take arms against") == 0, greedy.output);
  // Its attention page: one causal section whose rows name the character each predicts (the
  // greedy continuation: "Or to take arms" -> "r to take arms " shifted by one).
  auto page = run("attention --checkpoint " + whole + " --out " + whole + "/a.html \"Or to\"");
  REQUIRE_MESSAGE(page.code == 0, page.output);
  {
    std::string html = bytes(whole + "/a.html");
    std::string json = html.substr(html.find("application/json\">") + 18);
    json = json.substr(0, json.find("</script>"));
    const auto sections = nlohmann::json::parse(json)["sections"];
    REQUIRE(sections.size() == 1);
    CHECK(sections[0]["causal"] == true);
    CHECK(sections[0]["left"] == nlohmann::json({"O", "r", " ", "t", "o"}));
    CHECK(sections[0]["predicts"][0] == "r");  // after "O" the text always has "r"
    CHECK(sections[0]["predicts"][2] == "t");  // "Or " -> "t"
    CHECK(sections[0]["queries"].size() == sections[0]["layers"].size());
  }
  // The defaults are the ones --help names: seed 0, temperature 0.8, top-k 0 (all), top-p 1.
  auto explicit_defaults =
      run("generate --checkpoint " + whole +
          " --seed 0 --temperature 0.8 --top-k 0 --top-p 1 --max-new-tokens 100 \"To be\"");
  CHECK(explicit_defaults.output == g.output);
  auto other_seed =
      run("generate --checkpoint " + whole + " --seed 1 --max-new-tokens 100 \"To be\"");
  CHECK(other_seed.output != g.output);  // so that the comparison above can fail

  // Ctrl-C at the first progress line (step 50 of 400), then --resume (without --lr and
  // --warmup): the same weights as the uninterrupted run.
  auto c = interrupted_at("train --task lm --out " + cut + args, cut + "_job", " train loss ");
  REQUIRE_MESSAGE(c.code == 130, c.output);
  CHECK(c.output.find("interrupted") != std::string::npos);
  auto r = run("train --task lm --resume --out " + cut + " --threads 1 --text " + text);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(r.output.find("resuming") != std::string::npos);
  CHECK(bytes(whole + "/last/model.safetensors") == bytes(cut + "/last/model.safetensors"));
}

// With two threads the language model trains data-parallel (each thread a part of every
// batch, nn::DataParallel): what one thread learns, up to rounding, and a run interrupted by
// Ctrl-C still resumes to exactly the weights of an uninterrupted one.
TEST_CASE("language model on two threads: the one-thread result, and an exact resume") {
  const std::string text = lm_text("lm_text2");
  const std::string args = " --preset tiny --lr 3e-3 --warmup 20 --text " + text;
  const std::string one = fresh_dir("lm_one"), two = fresh_dir("lm_two");
  const auto runs = train_on_one_and_two("--task lm --iters 300" + args, one, two);
  const nlohmann::json &ma = runs.first, &mb = runs.second;
  REQUIRE(ma["curve"].size() == mb["curve"].size());
  for (size_t i = 0; i < ma["curve"].size(); ++i)  // the same batches, summed in other orders
    CHECK(mb["curve"][i][1].get<double>() ==
          doctest::Approx(ma["curve"][i][1].get<double>()).epsilon(1e-3));
  CHECK(mb["best"]["valid_loss"].get<double>() ==
        doctest::Approx(ma["best"]["valid_loss"].get<double>()).epsilon(1e-3));
  CHECK(bytes(one + "/last/model.safetensors") != bytes(two + "/last/model.safetensors"));

  const std::string whole = fresh_dir("lm_whole2"), cut = fresh_dir("lm_cut2");
  const std::string longer = " --iters 1500 --threads 2" + args;
  auto w = run("train --task lm --out " + whole + longer);
  REQUIRE_MESSAGE(w.code == 0, w.output);
  auto c = interrupted_at("train --task lm --out " + cut + longer, cut + "_job", " train loss ");
  REQUIRE_MESSAGE(c.code == 130, c.output);
  auto r = run("train --task lm --resume --out " + cut + " --threads 2 --text " + text);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(bytes(whole + "/last/model.safetensors") == bytes(cut + "/last/model.safetensors"));
}

// Translation steps split between the threads as the language model's do (nn::DataParallel).
// Without dropout, two threads learn what one learns, to rounding; the parts are weighted by
// their targets, not their rows: every source has 12 words, so the batches mix targets of 1 and
// of 11 words, and parts of the same rows hold different numbers of target tokens. With
// dropout, a run stopped by Ctrl-C resumes on two threads to the bits of one that was not
// stopped (each part's dropout generator comes from the checkpointed one).
TEST_CASE("translation on two threads: the one-thread result, and an exact resume") {
  const std::string one = fresh_dir("tr_one"), two = fresh_dir("tr_two");
  const std::string tsv = one + "_train.tsv";
  {
    std::ofstream f(tsv);
    for (int i = 0; i < 400; ++i) {
      std::string source, target;
      for (int w = 0; w < 12; ++w) source += fmt::format("{}w{}", w ? " " : "", (i * 7 + w) % 30);
      for (int w = 0; w < (i % 3 == 0 ? 11 : 1); ++w)
        target += fmt::format("{}v{}", w ? " " : "", (i * 7 + w) % 30);
      f << source << "\t" << target << "\n";
    }
  }
  const std::string args = " --corpus " + tsv +
                           " --epochs 2 --vocab-size 80 --max-tokens 1200 --preset tiny "
                           "--set hidden_dropout_prob=0 --set attention_probs_dropout_prob=0";
  const auto runs = train_on_one_and_two(args, one, two);
  const nlohmann::json &ma = runs.first, &mb = runs.second;
  REQUIRE(ma["history"].size() == 2);
  REQUIRE(mb["history"].size() == 2);
  for (const char* key : {"train_loss", "valid_loss"})
    for (size_t e = 0; e < 2; ++e) {
      CAPTURE(key);
      CAPTURE(e);
      CHECK(mb["history"][e][key].get<double>() ==
            doctest::Approx(ma["history"][e][key].get<double>()).epsilon(1e-4));
    }

  const std::string whole = fresh_dir("tr_whole2"), cut = fresh_dir("tr_cut2");
  const std::string longer =
      " --task copy --epochs 6 --no-early-stop --preset tiny --limit 8000 --threads 2";
  auto w = run("train --out " + whole + longer);
  REQUIRE_MESSAGE(w.code == 0, w.output);
  auto c = interrupted_at("train --out " + cut + longer, cut + "_job", "epoch 1/6");
  REQUIRE_MESSAGE(c.code == 130, c.output);
  auto r = run("train --task copy --epochs 6 --no-early-stop --resume --threads 2 --out " + cut +
               " --preset tiny --limit 8000");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(r.output.find("resuming") != std::string::npos);
  CHECK(bytes(whole + "/last/model.safetensors") == bytes(cut + "/last/model.safetensors"));
}

// The architecture from a config.json and --set, without C++; a bad field stops before anything
// is created.
TEST_CASE("train --config FILE and --set change the model, bad fields are refused up front") {
  const std::string dir = fresh_dir("config_set"), bad = fresh_dir("config_bad");
  const std::string config = dir + "_config.json";
  std::ofstream(config) << R"({"hidden_size": 48, "num_attention_heads": 3, "num_hidden_layers": 1,
    "intermediate_size": 96, "pre_layer_norm": false, "layer_norm_eps": 1e-5})";
  auto r = run("train --task copy --epochs 1 --config " + config +
               " --set position_embedding_type=sinusoidal --set attention_type=book --out " + dir +
               " --limit 300");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  std::ifstream f(dir + "/config.json");
  const auto saved = nlohmann::json::parse(f);
  CHECK(saved["hidden_size"] == 48);
  CHECK(saved["num_hidden_layers"] == 1);
  CHECK(saved["pre_layer_norm"] == false);
  CHECK(saved["position_embedding_type"] == "sinusoidal");
  CHECK(saved["attention_type"] == "book");
  CHECK(r.output.find("hidden 48, 3 heads, 1+1 layers") != std::string::npos);
  // The book's layout has no KV cache: greedy decoding recomputes instead.
  auto t = run("translate --checkpoint " + dir + " \"a b c\"");
  CHECK_MESSAGE(t.code == 0, t.output);
  // One layer/head of this one-layer, three-head model as an SVG heatmap; the range check names
  // both counts.
  // The smallest --layer and --head are accepted.
  auto first_head = run("attention --checkpoint " + dir + " --out " + dir + "/a.html --svg " + dir +
                        "/a0.svg --layer 0 --head 0 \"a b c\"");
  REQUIRE_MESSAGE(first_head.code == 0, first_head.output);
  // The translation drawn is translate's, under the same length limit (after one epoch a
  // model may not stop by itself).
  CHECK_MESSAGE(first_head.output.find("translation (greedy): " + t.output) != std::string::npos,
                first_head.output << " / " << t.output);
  CHECK(bytes(dir + "/a0.svg").find("layer 0, head 0") != std::string::npos);
  auto svg = run("attention --checkpoint " + dir + " --out " + dir + "/a.html --svg " + dir +
                 "/a.svg --head 2 \"a b c\"");
  REQUIRE_MESSAGE(svg.code == 0, svg.output);
  const std::string picture = bytes(dir + "/a.svg");
  CHECK(picture.find("<svg") == 0);
  CHECK_MESSAGE(picture.find("layer 0, head 2") != std::string::npos, picture.substr(0, 400));
  {
    // Its cells are head 2's weights in the page's last section (encoder-decoder attention),
    // row by row, and head 2 differs from head 0 there, so a picture of the wrong head fails.
    std::string page = bytes(dir + "/a.html");
    const std::string open = "<script id=\"data\" type=\"application/json\">";
    const auto from = page.find(open) + open.size();
    std::string json = page.substr(from, page.find("</script>", from) - from);
    for (size_t p = 0; (p = json.find("<\\/", p)) != std::string::npos;) json.erase(p + 1, 1);
    const auto heads = nlohmann::json::parse(json)["sections"].back()["layers"][0];
    std::vector<double> cells, wanted;
    for (size_t p = 0; (p = picture.find("<title>", p)) != std::string::npos; p += 7)
      cells.push_back(std::atof(picture.c_str() + p + 7));
    for (const auto& row : heads[2])
      for (const auto& v : row) wanted.push_back(v.get<double>());
    CHECK(heads[2] != heads[0]);
    REQUIRE(cells.size() == wanted.size());
    for (size_t i = 0; i < cells.size(); ++i) {
      const double error = std::abs(cells[i] - wanted[i]);  // both round to 3 decimals
      CHECK(error <= 1.1e-3);
    }
  }
  for (const char* range : {"--head 3", "--layer 1"}) {
    auto out = run("attention --checkpoint " + dir + " --out " + dir + "/b.html --svg " + dir +
                   "/b.svg " + range + " \"a b c\"");
    CHECK(out.code != 0);
    CHECK_MESSAGE(out.output.find("out of range (1 layers, 3 heads)") != std::string::npos,
                  out.output);
  }
  auto e1 = run("train --task copy --set hidden_size=big --out " + bad);
  CHECK(e1.code != 0);
  CHECK_MESSAGE(e1.output.find("hidden_size must be an integer") != std::string::npos, e1.output);
  auto e2 = run("train --task copy --set norm_type=rms_nrom --out " + bad);
  CHECK(e2.code != 0);
  CHECK_MESSAGE(e2.output.find("norm_type must be one of: layer_norm") != std::string::npos,
                e2.output);
  // A name this program does not know may be a part registered by another: the message says so.
  CHECK_MESSAGE(e2.output.find("read by that program") != std::string::npos, e2.output);
  // An unknown preset is refused before the task's data is made (which would print its sizes).
  auto e4 = run("train --task numbers --preset huge --out " + bad);
  CHECK(e4.code != 0);
  CHECK_MESSAGE(e4.output.find("huge") != std::string::npos, e4.output);
  CHECK_MESSAGE(e4.output.find("pairs") == std::string::npos, e4.output);
  CHECK_FALSE(std::filesystem::exists(bad));
  auto e3 = run("train --task copy --preset tiny --config " + config + " --out " + bad);
  CHECK(e3.code != 0);
  CHECK_FALSE(std::filesystem::exists(bad));
  auto list = run("config");
  CHECK(list.code == 0);
  CHECK(list.output.find("norm_type") != std::string::npos);
  auto preset = run("config --preset nanogpt");
  CHECK(preset.code == 0);
  CHECK(nlohmann::json::parse(preset.output)["num_hidden_layers"] == 4);
  auto unknown = run("config --preset huge");
  CHECK(unknown.code != 0);
  CHECK_MESSAGE(unknown.output.find("huge") != std::string::npos, unknown.output);
}

// One training per run folder: a second one, or a --resume while the first runs, is refused
// with the holder's pid; a loss that becomes NaN stops the run before it reaches the weights,
// and the folder keeps its last good checkpoint.
TEST_CASE("a run folder takes one training at a time, and a NaN loss stops the run cleanly") {
  const std::string dir = fresh_dir("locked");
  // The first training runs in the background until it gets Ctrl-C (SIGINT) from this test.
  Background first("train --task toylang --epochs 50 --preset tiny --out " + dir, dir + "_first");
  // Events, not fixed waits: run.json is written once the folder is locked; the lock is free
  // again once the first training has ended.
  auto lock_is_free = [&] {
    const int fd = open((dir + "/.lock").c_str(), O_RDWR);
    if (fd < 0) return false;
    const bool got = platform::try_lock_file(fd);
    close(fd);  // releases it again
    return got;
  };
  REQUIRE(wait_until([&] { return std::filesystem::exists(dir + "/run.json"); }));
  auto second = run("train --task toylang --epochs 1 --preset tiny --out " + dir);
  CHECK(second.code != 0);
  // The pid it names is the first training's, as that one wrote it into the lock file.
  CHECK_MESSAGE(second.output.find(fmt::format("in use by another training (pid {});",
                                               first.pid)) != std::string::npos,
                second.output);
  auto resume = run("train --task toylang --resume --out " + dir);
  CHECK(resume.code != 0);
  CHECK_MESSAGE(resume.output.find("in use by another training") != std::string::npos,
                resume.output);
  // Ctrl-C once its training loop runs (its first epoch line), when the handler is in place.
  REQUIRE(wait_until(
      [&] { return bytes(dir + "_first.log").find("epoch 1/50") != std::string::npos; }, 300));
  kill(first.pid, SIGINT);
  CHECK(first.finish().code == 130);
  REQUIRE(lock_is_free());  // the first one is done, and its lock gone with it
  auto after = run("train --task toylang --epochs 1 --resume --out " + dir);
  CHECK_MESSAGE(after.code == 0, after.output);

  const std::string nan_dir = fresh_dir("nan");
  auto diverged = run("train --task copy --epochs 2 --lr 1e30 --out " + nan_dir + " " + kQuick);
  CHECK(diverged.code != 0);
  CHECK_MESSAGE(diverged.output.find("the loss became") != std::string::npos, diverged.output);
  // Whatever was saved before is finite, and nothing non-finite was called the best.
  if (std::filesystem::exists(nan_dir + "/last/model.safetensors")) {
    for (const auto& [name, t] : load_safetensors(nan_dir + "/last/model.safetensors").tensors) {
      const std::string parameter = name;  // (clang 14: no structured binding in CHECK_MESSAGE)
      CHECK_MESSAGE(std::isfinite(t.abs().max().item()), parameter);
    }
  }
}

// kill -9 at moments spread over a run, saves included (a tiny run saves every second): each
// time, the folder is one that translate and --resume accept.
TEST_CASE("kill -9 at any moment leaves a folder that translate and --resume accept") {
  const std::string dir = fresh_dir("killed");
  const std::string train = std::string(ANATOMY_CLI) +
                            " train --task copy --preset tiny --limit 400 "
                            "--epochs 30 --no-early-stop --threads 1 --out " +
                            dir;
  int resumed = 0;
  for (const double delay : {0.05, 0.3, 0.9, 1.7, 2.6, 3.4}) {
    CAPTURE(delay);
    const std::string flag = std::filesystem::exists(dir + "/run.json") ? " --resume" : "";
    std::system(
        fmt::format("timeout -s KILL {} {}{} > /dev/null 2>&1", delay, train, flag).c_str());
    if (!std::filesystem::exists(dir + "/run.json")) continue;  // killed before it began
    // A killed run's lock can still be held for a moment after `timeout` returns: the test waits
    // for the lock itself, not for a fixed time (one never released hangs here until ctest's
    // timeout fails the test).
    if (const int fd = ::open((dir + "/.lock").c_str(), O_RDWR | O_CLOEXEC); fd >= 0) {
      platform::lock_file(fd);
      ::close(fd);
    }
    auto t = run("translate --checkpoint " + dir + " \"a b c\"");
    CHECK_MESSAGE(t.code == 0, t.output);
    auto r = run("train --task copy --epochs 1 --resume --threads 1 --out " + dir);
    CHECK_MESSAGE(r.code == 0, r.output);
    resumed += r.code == 0;
  }
  CHECK(resumed >= 4);
}

TEST_SUITE_END();
