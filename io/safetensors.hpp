// Reading and writing named tensors in the safetensors format (huggingface/safetensors):
//   8 bytes: N, the JSON header's length (little-endian u64)
//   N bytes: JSON {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//                  "__metadata__": {"key": "value"}}
//   the data: each tensor's bytes, row-major, little-endian, at its offsets.
// Reads F32, F16, BF16 (converted to float32) and I64; writes F32 and I64.
#pragma once

#include <map>
#include <string>

#include "autograd/tensor.hpp"

namespace anatomy {

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Validates the whole file first (header length, JSON, dtypes, shapes against offsets, offsets
// inside the data and not overlapping) and throws one Error listing every problem found.
SafetensorsFile load_safetensors(const std::string& path);
SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& source);

// Writes atomically: a temporary file beside `path`, flushed, then renamed over it, so a crash
// mid-save never destroys an existing file.
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Writes `bytes` to `path` atomically (the helper behind every save of the project). What a
// killed writer of the same path left (path.tmp<pid>) is removed first.
void write_file_atomically(const std::string& path, const std::string& bytes);

// Removes the entries of `dir` named <prefix><pid> whose process no longer runs: the temporary
// files and folders a writer killed before its rename left behind.
void remove_stale_leftovers(const std::string& dir, const std::string& prefix);

}  // namespace anatomy
