// The `anatomy` program end to end: `anatomy run` on weights exported from the book-style
// PyTorch models (tests/parity/make_golden_run.py) writes what PyTorch computed.
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "helpers.hpp"

using namespace anatomy;

namespace {

struct Result {
  int code;
  std::string output;  // stdout and stderr
};

Result run(const std::string& args) {
  const std::string log =
      (std::filesystem::temp_directory_path() / fmt::format("anatomy_cli_test_{}.log", getpid()))
          .string();  // one per process: ctest runs tests in parallel
  const int status =
      std::system((std::string(ANATOMY_CLI) + " " + args + " > " + log + " 2>&1").c_str());
  std::ifstream f(log);
  return {WEXITSTATUS(status), std::string(std::istreambuf_iterator<char>(f), {})};
}

std::string golden_dir(const std::string& kind) {
  return testing::test_path("parity/golden/run/" + kind);
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
          (std::filesystem::temp_directory_path() / ("anatomy_run_" + kind + ".safetensors"))
              .string();
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

TEST_CASE("anatomy run: bad input gives a clear message, a non-zero exit and no output file") {
  const std::string dir = golden_dir("seq2seq");
  const std::string out =
      (std::filesystem::temp_directory_path() / "anatomy_run_bad.safetensors").string();
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
