#include "io/safetensors.hpp"

#include "io/input_file.hpp"
#include "io/json_limits.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

namespace anatomy {

namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this build assumes a little-endian machine");

int64_t dtype_size(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "I64") return 8;
  if (dtype == "F16" || dtype == "BF16") return 2;
  return 0;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

float bf16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

}  // namespace

namespace {

// One tensor's entry in the header, checked against the data it points into.
struct Entry {
  std::string name;
  std::string dtype;
  Shape shape;
  int64_t begin, end;  // byte offsets into the data that follows the header
};

// The JSON header and where the data after it starts. The file begins with the header's byte
// count (8 bytes, little-endian), then the header, then the tensors' bytes.
struct Layout {
  nlohmann::json header;
  const char* data;
  int64_t data_size;
};

Layout read_layout(const std::string& bytes, const std::string& where) {
  if (bytes.size() < 8)
    throw Error(
        fmt::format("{}: file is {} bytes, too short for the 8-byte header length "
                    "(truncated?)",
                    where, bytes.size()));
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > bytes.size() - 8)
    throw Error(
        fmt::format("{}: header length {} runs past the end of the {}-byte file "
                    "(truncated or not a safetensors file)",
                    where, n, bytes.size()));
  Layout layout;
  try {
    layout.header =
        nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(n),
                              json_depth_limit(where + ": the header"));
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: the header is not valid JSON ({})", where, e.what()));
  }
  if (!layout.header.is_object())
    throw Error(fmt::format("{}: the header is not a JSON object", where));
  layout.data = bytes.data() + 8 + n;
  layout.data_size = static_cast<int64_t>(bytes.size() - 8 - n);
  return layout;
}

// The shape's dimensions, or nothing when it is not an array of integers >= 0.
std::optional<Shape> read_shape(const nlohmann::json& json) {
  if (!json.is_array()) return std::nullopt;
  Shape shape;
  for (const auto& d : json) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) return std::nullopt;
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

// The entry `name` of the header, or nothing with the reason added to `problems`.
std::optional<Entry> read_entry(const std::string& name, const nlohmann::json& info,
                                int64_t data_size, std::vector<std::string>& problems) {
  if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") ||
      !info.contains("data_offsets")) {
    problems.push_back(fmt::format("'{}': needs dtype, shape and data_offsets", name));
    return std::nullopt;
  }
  const auto& dt = info["dtype"];
  const std::string dtype = dt.is_string() ? dt.get<std::string>() : dt.dump();
  const int64_t size = dtype_size(dtype);
  if (size == 0) {
    problems.push_back(
        fmt::format("'{}': unsupported dtype {} (F32, F16, BF16, I64 are read)", name, dtype));
    return std::nullopt;
  }
  const std::optional<Shape> shape = read_shape(info["shape"]);
  const auto& off = info["data_offsets"];
  if (!shape || !off.is_array() || off.size() != 2 || !off[0].is_number_integer() ||
      !off[1].is_number_integer()) {
    problems.push_back(fmt::format("'{}': malformed shape or data_offsets", name));
    return std::nullopt;
  }
  const int64_t begin = off[0].get<int64_t>(), end = off[1].get<int64_t>();
  if (begin < 0 || end < begin || end > data_size) {
    problems.push_back(
        fmt::format("'{}': data_offsets [{}, {}] lie outside the {} data bytes "
                    "(truncated file?)",
                    name, begin, end, data_size));
    return std::nullopt;
  }
  // The byte count of the shape, checked at each product: a crafted shape such as
  // [2^40, 2^40] must be refused, not overflow int64 (undefined behaviour).
  int64_t bytes_needed = size;
  bool overflow = false;
  for (int64_t d : *shape)
    overflow = overflow || __builtin_mul_overflow(bytes_needed, d, &bytes_needed);
  if (overflow) {
    problems.push_back(fmt::format("'{}': shape {} of {} is larger than any file can hold", name,
                                   shape->str(), dtype));
    return std::nullopt;
  }
  if (end - begin != bytes_needed) {
    problems.push_back(fmt::format("'{}': shape {} of {} needs {} bytes but data_offsets span {}",
                                   name, shape->str(), dtype, bytes_needed, end - begin));
    return std::nullopt;
  }
  return Entry{name, dtype, *shape, begin, end};
}

// Adds a problem for each pair of entries whose bytes overlap (`entries` in header order).
void check_overlaps(std::vector<const Entry*> entries, std::vector<std::string>& problems) {
  std::sort(entries.begin(), entries.end(),
            [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < entries.size(); ++i)
    if (entries[i]->begin < entries[i - 1]->end)
      problems.push_back(fmt::format("'{}' and '{}': data_offsets overlap", entries[i - 1]->name,
                                     entries[i]->name));
}

// The tensor of a checked entry: I64 as int64, every float type widened to float32.
Tensor read_tensor(const Entry& e, const char* data) {
  const char* src = data + e.begin;
  const int64_t count = numel_of(e.shape);
  if (e.dtype == "I64") {
    Tensor t = empty(e.shape, Dtype::Int64);
    if (count) std::memcpy(t.data_ptr<int64_t>(), src, static_cast<size_t>(count) * 8);
    return t;
  }
  Tensor t = empty(e.shape);
  float* dst = t.data();
  if (e.dtype == "F32") {
    if (count) std::memcpy(dst, src, static_cast<size_t>(count) * 4);
  } else {
    for (int64_t i = 0; i < count; ++i) {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      dst[i] = e.dtype == "F16" ? half_to_float(h) : bf16_to_float(h);
    }
  }
  return t;
}

}  // namespace

SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& source) {
  const std::string where = fmt::format("load_safetensors: {}", source);
  const Layout layout = read_layout(bytes, where);
  SafetensorsFile file;
  // Every problem of the header is gathered, so one error names them all.
  std::vector<std::string> problems;
  std::vector<Entry> entries;
  for (const auto& [name, info] : layout.header.items()) {
    if (name != "__metadata__") {
      if (auto entry = read_entry(name, info, layout.data_size, problems))
        entries.push_back(std::move(*entry));
    } else if (!info.is_object()) {
      problems.push_back("__metadata__ is not an object");
    } else {
      for (const auto& [k, v] : info.items())
        file.metadata[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
  }
  std::vector<const Entry*> in_order;
  for (const auto& e : entries) in_order.push_back(&e);
  check_overlaps(std::move(in_order), problems);
  if (!problems.empty()) {
    std::string msg = fmt::format("{}: {} problem(s):", where, problems.size());
    for (const auto& p : problems) msg += "\n  - " + p;
    throw Error(msg);
  }
  for (const auto& e : entries) file.tensors[e.name] = read_tensor(e, layout.data);
  return file;
}

SafetensorsFile load_safetensors(const std::string& path) {
  // A folder opens as a stream too, and reports a size no buffer can hold.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(fmt::format("load_safetensors: {} is a folder, not a .safetensors file", path));
  std::ifstream f = open_input("load_safetensors", path);
  // One read into a buffer of the file's size: a stringstream would copy it twice, growing.
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  f.seekg(0, std::ios::beg);
  if (size < 0) throw Error(fmt::format("load_safetensors: cannot read {}", path));
  std::string bytes(static_cast<size_t>(size), '\0');
  if (!f.read(bytes.data(), size))
    throw Error(fmt::format("load_safetensors: cannot read {}", path));
  return parse_safetensors(bytes, path);
}

void remove_stale_leftovers(const std::string& dir, const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir.empty() ? "." : dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string pid = name.substr(prefix.size());
    if (pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    // kill(pid, 0) sends nothing: it only asks whether the process exists.
    if (kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH)
      fs::remove_all(entry.path(), ec);
  }
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = fmt::format("{}.tmp{}", path, static_cast<long>(getpid()));
  {
    const std::filesystem::path p(path);
    remove_stale_leftovers(p.parent_path().string(), p.filename().string() + ".tmp");
  }
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    throw Error(
        fmt::format("save: cannot write {} (does the folder exist and is it writable?)", path));
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size() &&
                  std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    throw Error(
        fmt::format("save: writing {} failed (disk full?); the previous file is intact", path));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(fmt::format("save: cannot replace {}", path));
  }
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string data;
  for (const auto& [name, t] : tensors) {
    if (!t.defined()) throw Error(fmt::format("save_safetensors: tensor '{}' is undefined", name));
    const bool is_float = t.dtype() == Dtype::Float32;
    const int64_t begin = static_cast<int64_t>(data.size());
    if (is_float) {
      const auto v = t.to_vector();
      data.append(reinterpret_cast<const char*>(v.data()), v.size() * 4);
    } else {
      const auto v = t.to_int_vector();
      data.append(reinterpret_cast<const char*>(v.data()), v.size() * 8);
    }
    header[name] = {{"dtype", is_float ? "F32" : "I64"},
                    {"shape", std::vector<int64_t>(t.shape().begin(), t.shape().end())},
                    {"data_offsets", {begin, static_cast<int64_t>(data.size())}}};
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  const uint64_t n = h.size();
  std::string bytes(reinterpret_cast<const char*>(&n), 8);
  bytes += h;
  bytes += data;
  write_file_atomically(path, bytes);
}

}  // namespace anatomy
