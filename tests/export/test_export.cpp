// anatomy export end to end with the test environment's PyTorch: the exported model.py gives the
// logits `anatomy run` gives; train.py under torch.distributed (2 processes, gloo) continues
// training with the loss still falling and identical replicas; the folder it writes comes back to
// `anatomy translate` with the tokens PyTorch's greedy decoding gives.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "helpers.hpp"
#include "tokenizers/tokenizers.hpp"

using namespace anatomy;

namespace {

// A TCP port no one listens on now, for torch.distributed's rendezvous: a fixed one fails when
// two test runs (or another program) use it at the same time.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;  // the kernel picks
  socklen_t len = sizeof(addr);
  int port = 29517;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  if (fd >= 0) close(fd);
  return port;
}

testing::CommandResult sh(const std::string& command) { return testing::run_command(command); }

// A language model trained for 2 steps on a short text, in tmp/lm: a run to export. Returns its
// folder.
std::string tiny_lm_run(const testing::TempDir& tmp) {
  const std::string text = tmp / "text.txt";
  {
    std::ofstream f(text);
    for (int i = 0; i < 200; ++i) f << "to be or not to be, that is the question.\n";
  }
  const std::string run = tmp / "lm";
  REQUIRE(sh(std::string(ANATOMY_CLI) + " train --threads 1 --task lm --preset tiny --iters 2 " +
             "--text " + text + " --out " + run)
              .code == 0);
  return run;
}

std::string fresh(const std::string& name) {
  const auto d = anatomy::testing::temp_root() / ("anatomy_export_" + name);
  std::filesystem::remove_all(d);
  return d.string();
}

// The test environment's Python (build/venv, which `make test` makes: PyTorch 2.13 CPU), as the
// reader of the export would have it.
const std::string kPython = std::string(ANATOMY_TEST_DIR) + "/../build/venv/bin/python";

// Whether PyTorch is there to run the export. Without it the test says so and is skipped, except
// where ANATOMY_REQUIRE_TEST_VENV=1 (CI), where a missing environment fails it.
bool have_torch() {
  if (sh(kPython + " -c 'import torch'").code == 0) return true;
  const char* required = std::getenv("ANATOMY_REQUIRE_TEST_VENV");
  if (required && std::string(required) == "1")
    FAIL("the test environment's PyTorch (" << kPython << ") is missing, and CI requires it");
  MESSAGE("skipped: the test environment build/venv is missing (make test creates it)");
  return false;
}

// A script that runs the exported model.py (kind: translation or lm) on fixed ids and writes its
// logits beside the export, for comparison with `anatomy run`.
void write_logits_script(const std::string& pkg, const std::string& kind, const std::string& call) {
  std::ofstream(pkg + "/logits.py")
      << "import sys, torch\nsys.path.insert(0, '" << pkg << "')\n"
      << "import model as book, safetensors_io as io\n"
      << "c = book.load_config(sys.argv[1] + '/config.json')\n"
      << "net = book.build(c, '" << kind << "')\n"
      << "net.load_state_dict(io.load(sys.argv[1] + '/model.safetensors')[0])\n"
      << "net.eval()\nwith torch.no_grad():\n    logits = net(" << call
      << ")\nio.save(sys.argv[1] + '/torch_out.safetensors', {'logits': logits})\n";
}

// The optimizer export.json tells train.py to continue with: a recipe that said otherwise than
// the trainer did would have PyTorch train another way than anatomy, silently.
nlohmann::json exported_optimizer(const std::string& pkg) {
  std::ifstream f(pkg + "/export.json");
  return nlohmann::json::parse(f).at("optimizer");
}

}  // namespace

// These train through the `anatomy` command: label end-to-end (the sanitizer run skips them).
TEST_SUITE_BEGIN("end-to-end");

TEST_CASE("export: PyTorch gets the same model, continues it with DDP, and it comes back") {
  if (!have_torch()) return;
  const std::string A = ANATOMY_CLI;
  const std::string run = fresh("run"), pkg = fresh("pkg"), back = fresh("back");
  std::filesystem::remove_all(back + "_logs");
  auto t = sh(A + " train --task copy --preset tiny --epochs 1 --schedule noam --threads 1 --out " +
              run);
  REQUIRE_MESSAGE(t.code == 0, t.output);
  auto e = sh(A + " export --checkpoint " + run + " --to " + pkg);
  REQUIRE_MESSAGE(e.code == 0, e.output);
  for (const char* f : {"model.py", "train.py", "safetensors_io.py", "model.safetensors",
                        "optimizer.safetensors", "data.safetensors", "export.json", "config.json",
                        "run.json", "source_tokenizer.json", "README.md"})
    CHECK_MESSAGE(std::filesystem::exists(pkg + "/" + f), f);
  // The translation trainer's AdamW decays every parameter, vectors too.
  CHECK(exported_optimizer(pkg)["weight_decay"] == 0.01);
  CHECK(exported_optimizer(pkg)["decay_vectors"] == true);
  CHECK(sh(A + " export --checkpoint " + run + " --to " + pkg).output.find("not empty") !=
        std::string::npos);
  // AdamW's moments come along under the model's own names, one pair per parameter, in its
  // shape (the output projection shares the embedding's parameter, so it has none of its own).
  {
    const auto weights = load_safetensors(pkg + "/model.safetensors").tensors;
    const auto moments = load_safetensors(pkg + "/optimizer.safetensors").tensors;
    int64_t first = 0, second = 0;
    for (const auto& moment : moments) {  // (not a structured binding: clang's CHECK_MESSAGE)
      const std::string& key = moment.first;
      if (key == "step") continue;
      const bool is_first = key.rfind("exp_avg.", 0) == 0;
      (is_first ? first : second) += 1;
      const std::string name = key.substr(is_first ? 8 : 11);
      CHECK_MESSAGE((is_first || key.rfind("exp_avg_sq.", 0) == 0), key);
      const auto it = weights.find(name);
      REQUIRE_MESSAGE(it != weights.end(), key);
      CHECK_MESSAGE(it->second.shape() == moment.second.shape(), key);
    }
    CHECK(first == second);
    CHECK(first == static_cast<int64_t>(weights.size()) - 1);  // all but the tied projection
  }

  // 1. The same logits from PyTorch's model.py as from `anatomy run` on the exported weights.
  auto r = sh(A + " run --config " + pkg + "/config.json --weights " + pkg +
              "/model.safetensors --model seq2seq --input-ids 5,9,7,12 --decoder-input-ids 2,12,7 "
              "--output " +
              pkg + "/anatomy_out.safetensors");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  write_logits_script(pkg, "translation",
                      "torch.tensor([[5, 9, 7, 12]]), torch.tensor([[2, 12, 7]])");
  auto p = sh(kPython + " " + pkg + "/logits.py " + pkg);
  REQUIRE_MESSAGE(p.code == 0, p.output);
  const Tensor ours = load_safetensors(pkg + "/anatomy_out.safetensors").tensors.at("logits");
  const Tensor theirs = load_safetensors(pkg + "/torch_out.safetensors").tensors.at("logits");
  CHECK_CLOSE(theirs, ours, 1e-4, 1e-4);

  // 2. Two processes (gloo) continue the run: the loss keeps falling, the replicas agree.
  auto d = sh(kPython + " -m torch.distributed.run --nproc_per_node 2 --master_port " +
              std::to_string(free_port()) + " --redirects 1 --tee 1 " + "--log_dir " + back +
              "_logs " + pkg + "/train.py --steps 40 --out " + back);
  REQUIRE_MESSAGE(d.code == 0, d.output);
  std::ifstream meta_file(back + "/run.json");
  const auto meta = nlohmann::json::parse(meta_file);
  const auto& c = meta["continued_in_pytorch"];
  CHECK(c["processes"] == 2);
  const auto losses = c["losses"].get<std::vector<double>>();
  REQUIRE(losses.size() == 40);
  double first = 0, last = 0;
  for (int i = 0; i < 10; ++i) first += losses[i], last += losses[30 + i];
  CHECK_MESSAGE(last < first * 0.9, d.output);
  const auto sums = c["replica_checksums"].get<std::vector<double>>();
  REQUIRE(sums.size() == 2);
  CHECK(sums[0] == sums[1]);
  // The step and AdamW's state went on from where anatomy stopped.
  std::ifstream pkg_meta(pkg + "/run.json");
  CHECK(meta["step"].get<int64_t>() == nlohmann::json::parse(pkg_meta)["step"].get<int64_t>() + 40);

  // 3. The folder PyTorch wrote comes back: anatomy translates as PyTorch's greedy decoding does.
  const std::vector<std::string> inputs = {"a b c d e", "t s r q", "k a f c h j"};
  auto source = text::load_tokenizer(back + "/source_tokenizer");
  auto target = text::load_tokenizer(back + "/target_tokenizer");
  const std::string decode_py = back + "/decode.py";
  std::ofstream(decode_py) << "import sys, torch\nsys.path.insert(0, '" << pkg << "')\n"
                           << "info = __import__('json').load(open('" << pkg << "/export.json'))\n"
                           << R"(import model as book, safetensors_io as io
c = book.load_config(sys.argv[1] + '/config.json')
net = book.build(c, 'translation')
net.load_state_dict(io.load(sys.argv[1] + '/best/model.safetensors')[0])
net.eval()
for row in sys.argv[2:]:
    ids = [int(x) for x in row.split(',')]
    limit = min(2 * len(ids) + 10, c.max_position_embeddings - 1)
    out = book.greedy_decode(net, torch.tensor([ids]), info['bos'], info['eos'], limit)[0]
    print(' '.join(str(t) for t in out))
)";
  std::string args;
  for (const auto& in : inputs) args += fmt::format(" {}", fmt::join(source->encode(in), ","));
  auto py = sh(kPython + " " + decode_py + " " + back + args);
  REQUIRE_MESSAGE(py.code == 0, py.output);
  std::string expected;
  std::istringstream lines(py.output);
  for (std::string line; std::getline(lines, line);) {
    std::vector<int64_t> ids;
    std::istringstream words(line);
    for (int64_t id; words >> id;) ids.push_back(id);
    expected += target->decode(ids) + "\n";
  }
  std::string quoted;
  for (const auto& in : inputs) quoted += " \"" + in + "\"";
  auto ours_out = sh(A + " translate --checkpoint " + back + quoted);
  REQUIRE_MESSAGE(ours_out.code == 0, ours_out.output);
  CHECK(ours_out.output == expected);
  CHECK(std::count(expected.begin(), expected.end(), '\n') == 3);
}

TEST_CASE(
    "export: a language model's logits match, train.py continues it, generate reads it back") {
  if (!have_torch()) return;
  const std::string A = ANATOMY_CLI;
  const std::string run = fresh("lm"), pkg = fresh("lm_pkg"), back = fresh("lm_back");
  const std::string text = run + ".txt";
  {
    std::ofstream f(text);
    for (int i = 0; i < 300; ++i) f << "to be or not to be, that is the question.\n";
  }
  auto t = sh(A + " train --task lm --text " + text +
              " --preset tiny --iters 60 --threads 1 --out " + run);
  REQUIRE_MESSAGE(t.code == 0, t.output);
  auto e = sh(A + " export --checkpoint " + run + " --to " + pkg);
  REQUIRE_MESSAGE(e.code == 0, e.output);
  // The language model's follows nanoGPT: no decay for biases and norm gains.
  CHECK(exported_optimizer(pkg)["weight_decay"] == 0.1);
  CHECK(exported_optimizer(pkg)["decay_vectors"] == false);
  auto r = sh(A + " run --config " + pkg + "/config.json --weights " + pkg +
              "/model.safetensors --model causal-lm --input-ids 5,9,7,12,3 --output " + pkg +
              "/anatomy_out.safetensors");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  write_logits_script(pkg, "lm", "torch.tensor([[5, 9, 7, 12, 3]])");
  auto p = sh(kPython + " " + pkg + "/logits.py " + pkg);
  REQUIRE_MESSAGE(p.code == 0, p.output);
  CHECK_CLOSE(load_safetensors(pkg + "/torch_out.safetensors").tensors.at("logits"),
              load_safetensors(pkg + "/anatomy_out.safetensors").tensors.at("logits"), 1e-4, 1e-4);
  // One process, no torchrun: train.py works the same way.
  auto c = sh("cd " + pkg + " && " + kPython + " train.py --steps 10 --out " + back);
  REQUIRE_MESSAGE(c.code == 0, c.output);
  auto g = sh(A + " generate --checkpoint " + back + " --max-new-tokens 20 \"to be\"");
  CHECK_MESSAGE(g.code == 0, g.output);
  CHECK(g.output.starts_with("to be"));
}

// What transformers has no class for is refused by the field that differs, before anything is
// written; the name mapping itself is checked in transformers (tests/python/check_hf_export.py).
TEST_CASE("export --to-hf: a run no transformers class computes is refused by name") {
  const std::string A = ANATOMY_CLI;
  const testing::TempDir tmp;
  const std::string text = tmp / "text.txt";
  {
    std::ofstream f(text);
    for (int i = 0; i < 200; ++i) f << "to be or not to be, that is the question.\n";
  }
  struct Case {
    std::string train, says;
  };
  const std::vector<Case> cases = {
      {"--task lm --text " + text + " --preset tiny --iters 2 --set norm_type=rms_norm",
       "norm_type is rms_norm (GPT-2: layer_norm)"},
      {"--task lm --text " + text + " --preset tiny --iters 2 --set pre_layer_norm=false",
       "pre_layer_norm is false (GPT-2: true)"},
      {"--task majority --epochs 1 --limit 64", "pre_layer_norm is true (BERT: false, post-LN)"},
      {"--task reverse --preset tiny --epochs 1 --limit 64",
       "holds a translation run; a language model (as GPT-2)"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(cases[i].train);
    const std::string run = tmp / fmt::format("run{}", i), hf = tmp / fmt::format("hf{}", i);
    const auto t = sh(A + " train --threads 1 --out " + run + " " + cases[i].train);
    REQUIRE_MESSAGE(t.code == 0, t.output);
    const auto e = sh(A + " export --checkpoint " + run + " --to-hf " + hf);
    CHECK(e.code != 0);
    CHECK_MESSAGE(e.output.find(cases[i].says) != std::string::npos, e.output);
    CHECK_FALSE(std::filesystem::exists(hf));
  }
  // A folder that holds something is not written into, and no half folder is left beside it.
  const std::string run = tmp / "lm";
  REQUIRE(sh(A + " train --threads 1 --task lm --preset tiny --iters 2 --text " + text + " --out " +
             run)
              .code == 0);
  std::filesystem::create_directories(tmp / "full");
  std::ofstream(tmp / "full/keep.txt") << "mine";
  const auto full = sh(A + " export --checkpoint " + run + " --to-hf " + (tmp / "full"));
  CHECK(full.code != 0);
  CHECK_MESSAGE(full.output.find("exists and is not empty") != std::string::npos, full.output);
  const auto ok = sh(A + " export --checkpoint " + run + " --to-hf " + (tmp / "hf"));
  REQUIRE_MESSAGE(ok.code == 0, ok.output);
  std::vector<std::string> written;
  for (const auto& entry : std::filesystem::directory_iterator(tmp / "hf"))
    written.push_back(entry.path().filename().string());
  std::sort(written.begin(), written.end());
  CHECK(written == std::vector<std::string>{"config.json", "model.safetensors"});
  for (const auto& entry : std::filesystem::directory_iterator(tmp.str()))
    CHECK_MESSAGE(entry.path().filename().string().find("partial") == std::string::npos,
                  entry.path().string());
  std::ifstream config_file(tmp / "hf/config.json");
  const auto config = nlohmann::json::parse(config_file);
  CHECK(config["architectures"] == nlohmann::json({"GPT2LMHeadModel"}));
  const auto neither = sh(A + " export --checkpoint " + run);
  CHECK(neither.code != 0);
  CHECK_MESSAGE(neither.output.find("give --to DIR") != std::string::npos, neither.output);
}

// export --to refuses, by name and before it writes anything, what the exported model.py and
// train.py cannot continue: a run of another kind, a run.json without the recipe train.py
// follows, a part the export does not cover, and a training state that is missing, lacks the
// optimizer's or the run's step, or holds optimizer buffers the model has no parameter for. Each
// broken run is a copy of one tiny language model, broken in one place.
TEST_CASE("export: a run it cannot continue in PyTorch is refused by name, and nothing written") {
  const std::string A = ANATOMY_CLI;
  const testing::TempDir tmp;
  const std::string good = tiny_lm_run(tmp);
  int copies = 0;
  auto copy = [&] {
    const std::string run = tmp / fmt::format("copy{}", copies++);
    std::filesystem::copy(good, run, std::filesystem::copy_options::recursive);
    return run;
  };
  auto refused = [&](const std::string& run, const std::string& says) {
    CAPTURE(says);
    const std::string to = tmp / fmt::format("to{}", copies++);
    const auto e = sh(A + " export --checkpoint " + run + " --to " + to);
    CHECK(e.code != 0);
    CHECK_MESSAGE(e.output.find(says) != std::string::npos, e.output);
    CHECK_FALSE(std::filesystem::exists(to));
  };
  auto edit_json = [](const std::string& path, const std::function<void(nlohmann::json&)>& f) {
    std::ifstream in(path);
    nlohmann::json j = nlohmann::json::parse(in);
    f(j);
    std::ofstream(path) << j.dump(2);
  };
  auto edit_state = [](const std::string& run, auto f) {
    const std::string path = run + "/last/training.safetensors";
    SafetensorsFile file = load_safetensors(path);
    f(file.tensors);
    save_safetensors(path, file.tensors, file.metadata);
  };
  // The unbroken copy exports: what is refused below is the one thing broken. Its data is the
  // text's first nine tenths, which the run trained on (the last tenth validated it): 7,560 of
  // the 8,400 characters.
  const std::string same = copy();
  CHECK(sh(A + " export --checkpoint " + same + " --to " + (tmp / "fine")).code == 0);
  const Tensor ids = load_safetensors(tmp / "fine/data.safetensors").tensors.at("ids");
  REQUIRE(ids.numel() == 7560);
  std::vector<int64_t> trained(static_cast<size_t>(ids.numel()));
  for (int64_t i = 0; i < ids.numel(); ++i)
    trained[static_cast<size_t>(i)] = ids.select(0, i).item<int64_t>();
  std::ifstream text_file(tmp / "text.txt");
  const std::string text((std::istreambuf_iterator<char>(text_file)), {});
  REQUIRE(text.size() == 8400);
  CHECK(text::load_tokenizer(same + "/tokenizer")->decode(trained) == text.substr(0, 7560));

  const std::string classifier = tmp / "classifier";
  REQUIRE(
      sh(A + " train --threads 1 --task majority --epochs 1 --limit 64 --out " + classifier).code ==
      0);
  refused(classifier, "holds a classifier run; translation and lm runs can be exported");
  {
    // It trained the one epoch asked for (the majority task's default is 5).
    std::ifstream f(classifier + "/run.json");
    const auto meta = nlohmann::json::parse(f);
    CHECK(meta["epochs"] == 1);
    CHECK(meta["history"].size() == 1);
  }

  const std::string no_recipe = copy();
  edit_json(no_recipe + "/run.json", [](nlohmann::json& j) { j.erase("recipe"); });
  refused(no_recipe, "run.json has no 'recipe' (it was trained by an older anatomy)");

  for (const auto& [field, value, has] :
       {std::tuple{"norm_type", "rms_norm", "layer_norm"},
        std::tuple{"ffn_type", "swiglu", "feed_forward"},
        std::tuple{"position_embedding_type", "rotary", "absolute or sinusoidal"}}) {
    const std::string part = copy();
    // Named copies: clang before C++20's rule does not let a lambda capture structured bindings.
    const std::string key = field, set = value;
    edit_json(part + "/config.json", [&](nlohmann::json& j) { j[key] = set; });
    refused(part,
            fmt::format(
                "export: {} '{}' is not one the export covers (it covers {}; docs/limitations.md)",
                field, value, has));
  }

  const std::string no_state = copy();
  std::filesystem::remove(no_state + "/last/training.safetensors");
  refused(no_state, "has no last/training.safetensors to continue from");

  const std::string no_optimizer_step = copy();
  edit_state(no_optimizer_step, [](auto& t) { t.erase("optimizer.step"); });
  refused(no_optimizer_step, "has no scalar 'optimizer.step': not a training state");
  const std::string two_steps = copy();
  edit_state(two_steps, [](auto& t) { t["step"] = full({2}, 2, kInt64); });
  refused(two_steps, "has no scalar 'step': not a training state");
  // The optimizer's buffers: for a parameter past the model's last, or of another shape.
  const std::string extra = copy();
  edit_state(extra, [](auto& t) { t["optimizer.state.9999.exp_avg"] = zeros({2}); });
  refused(extra,
          "holds an optimizer state this model cannot take: AdamW: load_state_dict "
          "(nothing was loaded):\n\tunexpected key 'state.9999.exp_avg'");
  const std::string reshaped = copy();
  edit_state(reshaped, [](auto& t) { t["optimizer.state.0.exp_avg_sq"] = zeros({3}); });
  refused(reshaped, "'state.0.exp_avg_sq': shape [3] but parameter 0 has shape");
}

// A full disk (ulimit -f, with SIGXFSZ ignored so that the write fails instead of killing the
// process) stops an export with a message and leaves neither the folder nor a partial one; the
// retry then succeeds. Both kinds of export.
TEST_CASE("export: a write that fails leaves nothing behind, and the retry succeeds") {
  const std::string A = ANATOMY_CLI;
  const testing::TempDir tmp;
  const std::string run = tiny_lm_run(tmp);
  for (const std::string to : {"--to", "--to-hf"}) {
    CAPTURE(to);
    const std::string dest = tmp / ("out" + to);
    // 64 blocks of 512 bytes: less than the model's weights.
    const auto full = sh("bash -c 'trap \"\" XFSZ; ulimit -f 64; " + A + " export --checkpoint " +
                         run + " " + to + " " + dest + "'");
    CHECK(full.code != 0);
    CHECK_MESSAGE(full.output.find("nothing was left there") != std::string::npos, full.output);
    CHECK_FALSE(std::filesystem::exists(dest));
    for (const auto& entry : std::filesystem::directory_iterator(tmp.str()))
      CHECK_MESSAGE(entry.path().filename().string().find("partial") == std::string::npos,
                    entry.path().string());
    const auto retry = sh(A + " export --checkpoint " + run + " " + to + " " + dest);
    CHECK_MESSAGE(retry.code == 0, retry.output);
    CHECK(std::filesystem::exists(dest + "/model.safetensors"));
  }
}

// export.json gives the loop the schedule's own step, from the training state's scheduler.step,
// and the optimizer's step when a state has none. Here the two are made to differ (in a run they
// move together, which would hide which one is read). The package may go into an empty folder
// that already exists, not into one that holds anything.
TEST_CASE("export: the schedule continues from the scheduler's step, into an empty --to folder") {
  const std::string A = ANATOMY_CLI;
  const testing::TempDir tmp;
  const std::string run = tiny_lm_run(tmp);
  const std::string state = run + "/last/training.safetensors";
  SafetensorsFile file = load_safetensors(state);
  REQUIRE(file.tensors.count("scheduler.step"));
  CHECK(file.tensors.at("step").item<int64_t>() == 2);
  auto exported_step = [&](const std::string& name) {
    save_safetensors(state, file.tensors, file.metadata);
    const std::string to = tmp / name;
    const auto e = sh(A + " export --checkpoint " + run + " --to " + to);
    REQUIRE_MESSAGE(e.code == 0, e.output);
    std::ifstream f(to + "/export.json");
    return nlohmann::json::parse(f)["schedule"]["step"].get<int64_t>();
  };
  file.tensors["scheduler.step"] = full({}, 7, kInt64);
  CHECK(exported_step("seven") == 7);
  file.tensors.erase("scheduler.step");
  CHECK(exported_step("none") == 2);
  // --to may name a folder that exists while it is empty; one that holds anything is refused.
  const std::string empty = tmp / "empty";
  std::filesystem::create_directories(empty);
  const auto into_empty = sh(A + " export --checkpoint " + run + " --to " + empty);
  CHECK_MESSAGE(into_empty.code == 0, into_empty.output);
  CHECK(std::filesystem::exists(empty + "/model.safetensors"));
  const auto again = sh(A + " export --checkpoint " + run + " --to " + empty);
  CHECK(again.code != 0);
  CHECK_MESSAGE(
      again.output.find("export: " + empty + " exists and is not empty; choose another --to") !=
          std::string::npos,
      again.output);
}

TEST_SUITE_END();
