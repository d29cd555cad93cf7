// safetensors: round trip, PyTorch-written files, and every kind of broken file.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "helpers.hpp"

using namespace anatomy;
using testing::check_error;

namespace {

std::string tmp_path(const std::string& name) {
  return (anatomy::testing::temp_root() / ("anatomy_test_" + name)).string();
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// A file from a hand-written header and data.
std::string make_file(const std::string& header, const std::string& data) {
  const uint64_t n = header.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + header + data;
}

}  // namespace

TEST_CASE("safetensors round trip is bit-exact, with metadata and int64") {
  manual_seed(0);
  std::map<std::string, Tensor> in{{"encoder.weight", randn({3, 4})},
                                   {"ids", tensor({{2051, 10029}})},
                                   {"scalar", full({}, 2.5f)},
                                   {"view", randn({4, 3}).t()}};
  const std::string path = tmp_path("roundtrip.safetensors");
  save_safetensors(path, in, {{"format", "pt"}});
  auto out = load_safetensors(path);
  CHECK(out.metadata.at("format") == "pt");
  REQUIRE(out.tensors.size() == in.size());
  for (const auto& [name, t] : in) {
    CHECK(out.tensors.at(name).shape() == t.shape());
    CHECK(out.tensors.at(name).dtype() == t.dtype());
    if (t.dtype() == kFloat32)
      CHECK(out.tensors.at(name).to_vector() == t.to_vector());
    else
      CHECK(out.tensors.at(name).to_int_vector() == t.to_int_vector());
  }
  // As the safetensors library writes it: the JSON header padded with spaces so that the data
  // starts at a multiple of 8 bytes (readers that map the file rely on it). Names of eight
  // lengths make headers of eight lengths, so all but one need padding.
  for (std::string name = "a"; name.size() <= 8; name += "b") {
    CAPTURE(name);
    save_safetensors(path, {{name, full({1}, 1.0f)}});
    const std::string bytes = read_bytes(path);
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    CHECK(n % 8 == 0);
    const std::string header = bytes.substr(8, n);
    const size_t last = header.find_last_not_of(' ');
    CHECK(header[last] == '}');
    CHECK(n - 1 - last <= 7);  // padding, not more
    CHECK(load_safetensors(path).tensors.at(name).to_vector() == std::vector<float>{1.0f});
  }
  std::filesystem::remove(path);
}

TEST_CASE("safetensors reads F16 and BF16") {
  // 1.0, -2.0, 0.5 in half (0x3C00, 0xC000, 0x3800) and in bfloat16 (0x3F80, 0xC000, 0x3F00).
  const std::string half("\x00\x3c\x00\xc0\x00\x38", 6), bf("\x80\x3f\x00\xc0\x00\x3f", 6);
  auto f = parse_safetensors(make_file(R"({"h":{"dtype":"F16","shape":[3],"data_offsets":[0,6]},)"
                                       R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[6,12]}})",
                                       half + bf),
                             "test");
  CHECK(f.tensors.at("h").to_vector() == std::vector<float>{1.0f, -2.0f, 0.5f});
  CHECK(f.tensors.at("b").to_vector() == std::vector<float>{1.0f, -2.0f, 0.5f});
}

// Half's edge cases, as torch converts them: signed zeros, the smallest subnormal, a subnormal
// that needs normalizing, infinities, the largest finite value, NaN.
TEST_CASE("safetensors: F16 subnormals, infinities and NaN convert as torch's .float()") {
  const uint16_t bits[] = {0x0000, 0x8000, 0x0001, 0x81F7, 0x7C00, 0xFC00, 0x7BFF, 0x7E00};
  std::string data;
  for (uint16_t b : bits)
    data += std::string{static_cast<char>(b & 0xff), static_cast<char>(b >> 8)};
  auto f = parse_safetensors(
      make_file(R"({"h":{"dtype":"F16","shape":[8],"data_offsets":[0,16]}})", data), "test");
  const auto v = f.tensors.at("h").to_vector();
  CHECK(v[0] == 0.0f);
  CHECK_FALSE(std::signbit(v[0]));
  CHECK(v[1] == 0.0f);
  CHECK(std::signbit(v[1]));
  CHECK(v[2] == 5.960464477539063e-08f);
  CHECK(v[3] == -2.9981136322021484e-05f);
  CHECK(v[4] == INFINITY);
  CHECK(v[5] == -INFINITY);
  CHECK(v[6] == 65504.0f);
  CHECK(std::isnan(v[7]));
}

// Every broken entry is reported, each with its own reason, in one error.
TEST_CASE("safetensors: a header with several broken entries lists them all") {
  const std::string header = R"({"__metadata__": 3, "a": {"dtype": "F32"},)"
                             R"( "b": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},)"
                             R"( "c": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]},)"
                             R"( "d": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})";
  check_error([&] { parse_safetensors(make_file(header, std::string(8, '\0')), "f"); },
              {"f: 4 problem(s):", "__metadata__ is not an object",
               "'a': needs dtype, shape and data_offsets", "'b': unsupported dtype U8",
               "'c': malformed shape or data_offsets"});
}

TEST_CASE("safetensors: broken files give one clear error") {
  const std::string good =
      make_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0'));
  CHECK(parse_safetensors(good, "good").tensors.at("w").numel() == 2);
  check_error([&] { parse_safetensors(good.substr(0, 5), "f"); }, {"too short"});
  check_error([&] { parse_safetensors(good.substr(0, 20), "f"); }, {"header length", "truncated"});
  check_error([&] { parse_safetensors(good.substr(0, good.size() - 3), "f"); },
              {"'w'", "outside", "truncated"});
  check_error([&] { parse_safetensors(make_file("{not json", ""), "f"); }, {"not valid JSON"});
  check_error(
      [&] {
        parse_safetensors(make_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                                    std::string(8, 0)),
                          "f");
      },
      {"'w'", "[3]", "needs 12 bytes", "span 8"});
  // The span is end - begin, also for a tensor that does not start the data.
  check_error(
      [&] {
        parse_safetensors(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                    R"("w":{"dtype":"F32","shape":[3],"data_offsets":[4,12]}})",
                                    std::string(12, 0)),
                          "f");
      },
      {"'w'", "needs 12 bytes but data_offsets span 8"});
  check_error(
      [&] {
        parse_safetensors(make_file(R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})",
                                    std::string(8, 0)),
                          "f");
      },
      {"unsupported dtype F64"});
  check_error(
      [&] {
        parse_safetensors(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                    R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                    std::string(12, 0)),
                          "f");
      },
      {"overlap"});
  // Several problems are listed together.
  check_error(
      [&] {
        parse_safetensors(make_file(R"({"a":{"dtype":"X","shape":[2],"data_offsets":[0,8]},)"
                                    R"("b":{"dtype":"F32","shape":[9],"data_offsets":[0,8]}})",
                                    std::string(8, 0)),
                          "f");
      },
      {"2 problem(s)", "'a'", "'b'"});
  check_error([&] { load_safetensors("/nonexistent/file.safetensors"); }, {"cannot open"});
  // A folder where the file should be (a checkpoint folder passed one level too high).
  check_error([&] { load_safetensors(anatomy::testing::temp_root().string()); },
              {"load_safetensors", "is a folder"});
}

TEST_CASE("saving is atomic: a failed save leaves the old file intact") {
  const std::string path = tmp_path("atomic.safetensors");
  save_safetensors(path, {{"w", ones({2})}});
  const std::string before = read_bytes(path);
  check_error(
      [&] {
        save_safetensors(path, {{"w", ones({2})}, {"bad", Tensor()}});
      },
      {"undefined"});
  CHECK(read_bytes(path) == before);
  check_error(
      [&] {
        save_safetensors("/nonexistent/dir/x.safetensors", {{"w", ones({2})}});
      },
      {"cannot write"});
  std::filesystem::remove(path);
}

// PyTorch saves tensors with a dimension of size 0 (an empty batch, say); they read back with
// their shape.
TEST_CASE(
    "safetensors: a dimension of size 0 reads back; a data offset that is not a number is named") {
  const Tensor back =
      parse_safetensors(make_file(R"({"e":{"dtype":"F32","shape":[2,0],"data_offsets":[0,0]},)"
                                  R"("w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                                  std::string(4, '\0')),
                        "f")
          .tensors.at("e");
  CHECK(back.shape() == Shape{2, 0});
  for (const std::string offsets : {R"(["0",4])", R"([0,"4"])", R"([0,4.5])"}) {
    CAPTURE(offsets);
    check_error(
        [&] {
          parse_safetensors(
              make_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":)" + offsets + "}}",
                        std::string(4, '\0')),
              "f");
        },
        {"f: 1 problem(s):", "'w': malformed shape or data_offsets"});
  }
}

// A save writes PATH.tmpPID first; leftovers of processes that no longer run are removed, and
// nothing else: not a live process's, not a name that only looks like one.
TEST_CASE("remove_stale_leftovers removes a dead process's leftovers and nothing else") {
  namespace fs = std::filesystem;
  testing::TempDir dir;
  const std::string prefix = "w.safetensors.tmp";
  const std::string dead = prefix + "99999999";  // above any pid_max: no such process
  const std::string live = prefix + std::to_string(getpid());
  // Names as long as a leftover's, with digits where its pid is, but another prefix.
  const std::string other = "x.safetensors.tmp99999999", near = "w.safetensors.tm199999999";
  const std::string words = prefix + "abc";
  for (const std::string& name : {dead, live, other, near, words}) std::ofstream(dir / name) << "x";
  remove_stale_leftovers(dir.str(), prefix);
  CHECK_FALSE(fs::exists(dir / dead));
  for (const std::string& kept : {live, other, near, words}) {
    CAPTURE(kept);
    CHECK(fs::exists(dir / kept));
  }
}
