// Opening a file the user named. When it cannot be read, the error says why in the user's
// words: there is no such file, it is a folder, a named pipe nothing writes to, or the system's
// reason (permission denied, ...), so that nothing reads a folder as an empty file or waits
// forever on a pipe.
#pragma once

#include <fstream>
#include <string>

namespace anatomy {

// Opens `path` for reading (binary: bytes as they are), or throws an Error
// "<who>: cannot open <what> <path>: <why>".
std::ifstream open_input(const std::string& who, const std::string& path,
                         const std::string& what = "");

}  // namespace anatomy
