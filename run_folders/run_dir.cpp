#include "run_folders/run_dir.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/json_limits.hpp"
#include "io/safetensors.hpp"
#include "platform/platform.hpp"

namespace anatomy::training {

namespace fs = std::filesystem;

namespace {

// What run.json may hold: each field any reader uses, with its type and range. read_run()
// checks a file against this before anything reads a value, so a hand-edited or damaged
// run.json gets an error naming the field, never a raw JSON error or an out-of-range value
// that training would then trust (a negative clip, say).
enum class Type { String, Bool, Int, Number, Object, Array };
struct Rule {
  const char* key;
  Type type;
  double min = 0, max = 0;  // for Int and Number
};

const char* type_words(Type t) {
  switch (t) {
    case Type::String:
      return "a string";
    case Type::Bool:
      return "true or false";
    case Type::Int:
      return "an integer";
    case Type::Number:
      return "a number";
    case Type::Object:
      return "an object";
    case Type::Array:
      return "an array";
  }
  return "?";
}

// `where` names the file, `name` the field as a path: "options.clip", "curve[2][0]".
void check_value(const nlohmann::json& v, const Rule& r, const std::string& where,
                 const std::string& name) {
  const bool ok = r.type == Type::String   ? v.is_string()
                  : r.type == Type::Bool   ? v.is_boolean()
                  : r.type == Type::Int    ? v.is_number_integer()
                  : r.type == Type::Number ? v.is_number()
                  : r.type == Type::Object ? v.is_object()
                                           : v.is_array();
  const bool numeric = r.type == Type::Int || r.type == Type::Number;
  if (ok && (!numeric || (v.get<double>() >= r.min && v.get<double>() <= r.max))) return;
  std::string value = v.dump();
  if (value.size() > 40) value = value.substr(0, 40) + "...";
  throw Error(numeric ? fmt::format("{}: '{}' is {} (expected {} in [{:g}, {:g}])", where, name,
                                    value, type_words(r.type), r.min, r.max)
                      : fmt::format("{}: '{}' is {} (expected {})", where, name, value,
                                    type_words(r.type)));
}

void check_fields(const nlohmann::json& object, std::initializer_list<Rule> rules,
                  const std::string& where, const std::string& prefix = "") {
  for (const auto& r : rules) {
    auto it = object.find(r.key);
    if (it != object.end()) check_value(*it, r, where, prefix + r.key);
  }
}

constexpr double kMaxInt = 9.0e15;  // below 2^53: an integer a double holds exactly
const Rule kFinite{"", Type::Number, -1e300, 1e300};

// run.json's own fields, and the objects that describe the run: its data, its decoding, its plan
// and its options.
void check_run_fields(const nlohmann::json& run, const std::string& where) {
  check_fields(run,
               {{"kind", Type::String},
                {"preset", Type::String},
                {"schedule", Type::String},
                {"description", Type::String},
                {"text", Type::String},
                {"seed", Type::Int, 0, 1.8446744073709552e19},
                {"epochs", Type::Int, 0, 1e6},
                {"iters", Type::Int, 0, 1e9},
                {"step", Type::Int, 0, kMaxInt},
                {"seconds", Type::Number, 0, 1e12},
                {"data", Type::Object},
                {"options", Type::Object},
                {"recipe", Type::Object},
                {"decoding", Type::Object},
                {"plan", Type::Object},
                {"history", Type::Array},
                {"curve", Type::Array}},
               where);
  if (run.contains("data"))
    check_fields(run["data"],
                 {{"task", Type::String},
                  {"corpus", Type::String},
                  {"max_chars", Type::Int, 0, 1e9},
                  {"skip_malformed", Type::Bool},
                  {"valid", Type::String},
                  {"test", Type::String},
                  {"reverse", Type::Bool},
                  {"split", Type::String}},
                 where, "data.");
  // The decoding a translation run chose on validation (Translator::load reads beam and
  // length_penalty from it): both are required when the object is there.
  if (run.contains("decoding")) {
    check_fields(run["decoding"],
                 {{"beam", Type::Int, 1, 1000},
                  {"length_penalty", Type::Number, 0, 10},
                  {"pairs", Type::Int, 0, 1e9},
                  {"greedy_bleu", Type::Number, 0, 100},
                  {"beam_bleu", Type::Number, 0, 100}},
                 where, "decoding.");
    for (const char* key : {"beam", "length_penalty"})
      if (!run["decoding"].contains(key))
        throw Error(fmt::format("{}: 'decoding.{}' is missing", where, key));
  }
}

void check_plan_and_options(const nlohmann::json& run, const std::string& where) {
  // What a corpus run sized for its budget measured and planned (informative: a resumed run
  // keeps it and reads only its epochs, for the first guess of its schedule).
  if (run.contains("plan")) {
    check_fields(run["plan"],
                 {{"size", Type::String},
                  {"threads", Type::Int, 1, 1e6},
                  {"tokens_per_second", Type::Number, 0, 1e15},
                  {"epoch_overhead", Type::Number, 0, 1e12},
                  {"measure_seconds", Type::Number, 0, 1e12},
                  {"time_budget", Type::Number, 0, 1e12},
                  {"epochs", Type::Number, 0, 1e12},
                  {"steps_per_epoch", Type::Int, 0, kMaxInt},
                  {"measured", Type::Object}},
                 where, "plan.");
    const nlohmann::json measured = run["plan"].value("measured", nlohmann::json::object());
    for (const auto& [name, rate] : measured.items())
      check_value(rate, {"", Type::Number, 0, 1e15}, where, "plan.measured." + name);
  }
  // The ranges of `anatomy train`'s options (0 meaning "the preset's", as on the command line).
  if (run.contains("options"))
    check_fields(run["options"],
                 {{"lr", Type::Number, 0, 1e30},
                  {"warmup", Type::Int, 0, 1e9},
                  {"max_tokens", Type::Int, 0, 1e7},
                  {"label_smoothing", Type::Number, 0, 0.99},
                  {"clip", Type::Number, 0, 1e6},
                  {"limit", Type::Int, 0, 1e9},
                  {"early_stop", Type::Bool},
                  {"select", Type::String},
                  {"average", Type::Int, 0, 1e6},
                  {"time_budget", Type::Number, 0, 1e9}},
                 where, "options.");
}

// Metrics are finite numbers (or flags): the trainer never writes a NaN, which JSON would
// hold as null. The one null it writes is a history line's train_loss when no batch was
// trained since the line before (a Ctrl-C or a time budget right after an evaluation). The
// metrics the library reads back as numbers (the loss curve, a resumed run's best) may not be
// flags: a valid_loss of true reached read_history as nlohmann's raw type_error (the fuzzer
// found it). Any other metric may be a flag, as the trainer's own "complete".
bool read_as_number(const std::string& key) {
  for (const char* k :
       {"valid_loss", "bleu", "exact_match", "accuracy", "train_loss", "train_nll", "seconds"})
    if (key == k) return true;
  return false;
}

void check_metrics(const nlohmann::json& m, const std::string& where, const std::string& prefix) {
  for (const auto& [key, value] : m.items())
    if (!(value.is_boolean() && !read_as_number(key)) && !(key == "train_loss" && value.is_null()))
      check_value(value, kFinite, where, prefix + key);
}

// The evaluations: the best one, and each line of the history.
void check_evaluations(const nlohmann::json& run, const std::string& where) {
  if (run.contains("best") && !run["best"].is_null()) {
    check_value(run["best"], {"", Type::Object}, where, "best");
    check_metrics(run["best"], where, "best.");
  }
  if (run.contains("history")) {
    for (size_t i = 0; i < run["history"].size(); ++i) {
      const auto& h = run["history"][i];
      const std::string name = fmt::format("history[{}]", i);
      check_value(h, {"", Type::Object}, where, name);
      check_fields(h, {{"step", Type::Int, 0, kMaxInt}, {"epoch", Type::Int, 0, kMaxInt}}, where,
                   name + ".");
      check_metrics(h, where, name + ".");
    }
  }
}

// The loss curve's points: [step, loss, lr], each finite.
void check_curve(const nlohmann::json& run, const std::string& where) {
  if (run.contains("curve")) {
    for (size_t i = 0; i < run["curve"].size(); ++i) {
      const auto& c = run["curve"][i];
      const std::string name = fmt::format("curve[{}]", i);
      if (!c.is_array() || c.size() != 3)
        throw Error(fmt::format("{}: '{}' is {} (expected [step, loss, lr])", where, name,
                                c.dump().substr(0, 40)));
      check_value(c[0], {"", Type::Int, 0, kMaxInt}, where, name + "[0]");
      check_value(c[1], kFinite, where, name + "[1]");
      check_value(c[2], kFinite, where, name + "[2]");
    }
  }
}

void check_run_json(const nlohmann::json& run, const std::string& where) {
  check_run_fields(run, where);
  check_plan_and_options(run, where);
  check_evaluations(run, where);
  check_curve(run, where);
}

}  // namespace

RunLock& RunLock::operator=(RunLock&& o) noexcept {
  std::swap(fd_, o.fd_);
  return *this;
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

RunLock RunDir::lock() const {
  const std::string path = file(".lock");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(fmt::format("cannot open {} ({})", path, std::strerror(errno)));
  if (!platform::try_lock_file(fd)) {
    char pid[32] = {};
    const auto n = ::pread(fd, pid, sizeof(pid) - 1, 0);
    ::close(fd);
    throw Error(
        fmt::format("{} is in use by another training (pid {}); wait for it to finish, "
                    "or choose another --out",
                    this->path, n > 0 ? std::string(pid, static_cast<size_t>(n)) : "?"));
  }
  // Holding the lock, no other training writes here: a *.tmp<pid> file left by one that was
  // killed inside a save (write_file_atomically) is garbage.
  for (const std::string sub : {"", "best", "last", "checkpoints", "split"}) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(file(sub), ec)) {
      const std::string name = entry.path().filename().string();
      const auto at = name.rfind(".tmp");
      if (at != std::string::npos && at + 4 < name.size() &&
          name.find_first_not_of("0123456789", at + 4) == std::string::npos)
        fs::remove(entry.path(), ec);
    }
  }
  const std::string me = std::to_string(::getpid());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) < 0) {
    // The pid is only for the message of a second training; the lock holds without it.
  }
  return RunLock(fd);
}

RunLock RunDir::create() const {
  std::error_code ec;
  fs::create_directories(file("best"), ec);
  if (!ec) fs::create_directories(file("last"), ec);
  if (ec) throw Error(fmt::format("cannot create the output folder {} ({})", path, ec.message()));
  // Fail now, not after an hour of training, if the folder is not writable.
  const std::string probe = file(".write-test");
  if (!std::ofstream(probe)) throw Error(fmt::format("the output folder {} is not writable", path));
  fs::remove(probe, ec);
  RunLock held = lock();
  // Another training may have started here between our check and our lock.
  if (fs::exists(file("run.json")))
    throw Error(fmt::format(
        "{} already holds a training run; pass --resume to continue it, or choose another --out",
        path));
  return held;
}

nlohmann::json RunDir::read_run() const {
  std::ifstream f(file("run.json"));
  if (!f)
    throw Error(
        fmt::format("{} is not a training run folder (no run.json); train one with "
                    "anatomy train --out {}",
                    path, path));
  nlohmann::json run;
  try {
    run = nlohmann::json::parse(f, json_depth_limit(file("run.json")));
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: run.json is not valid JSON ({})", path, e.what()));
  }
  if (!run.is_object())
    throw Error(
        fmt::format("{}: run.json must hold a JSON object (got {})", path, run.type_name()));
  check_run_json(run, file("run.json"));
  return run;
}

nlohmann::json RunDir::read_run(const std::string& kind) const {
  auto run = read_run();
  if (run.value("kind", "") != kind)
    throw Error(fmt::format("{} holds a {} run, not a {} run", path, run.value("kind", "?"), kind));
  return run;
}

nlohmann::json RunDir::start(bool resume, const std::string& kind) const {
  if (resume) return read_run(kind);
  if (fs::exists(file("run.json"))) {
    if (fs::exists(file(".lock"))) RunLock running = lock();  // "in use by pid N", if it is
    throw Error(fmt::format(
        "{} already holds a training run; pass --resume to continue it, or choose another --out",
        path));
  }
  return nlohmann::json::object();
}

void RunDir::write_run(const nlohmann::json& run) const {
  write_file_atomically(file("run.json"), run.dump(2) + "\n");
}

models::TransformerConfig RunDir::read_config() const {
  return models::TransformerConfig::from_json_file(file("config.json"));
}

std::string RunDir::weights() const {
  if (fs::exists(file("best/model.safetensors"))) return file("best/model.safetensors");
  if (fs::exists(file("last/model.safetensors"))) return file("last/model.safetensors");
  throw Error(fmt::format("{} holds no weights yet (best/ and last/ are empty)", path));
}

}  // namespace anatomy::training
