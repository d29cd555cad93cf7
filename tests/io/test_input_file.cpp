// open_input: a file a user names that cannot be read is refused with the reason.
#include <sys/stat.h>

#include "helpers.hpp"

using namespace anatomy;
using namespace anatomy::testing;

TEST_CASE("open_input reads a file, and says why when it cannot") {
  TempDir dir;
  { std::ofstream(dir / "here.txt") << "a line\n"; }
  std::ifstream f = open_input("test", dir / "here.txt");
  std::string line;
  std::getline(f, line);
  CHECK(line == "a line");

  check_error([&] { open_input("translate", dir / "missing.txt"); },
              {"translate: cannot open", "missing.txt", "no such file"});
  // A folder is refused, not read as an empty file.
  check_error([&] { open_input("corpus", dir.str(), "the corpus"); },
              {"corpus: cannot open the corpus", dir.str(), "it is a folder, not a file"});
  check_error([&] { open_input("bleu", ""); }, {"bleu", "the path is empty"});
  // Without read permission (root reads anything, so only an ordinary user sees this).
  if (geteuid() != 0) {
    std::ofstream(dir / "secret.txt") << "x";
    chmod((dir / "secret.txt").c_str(), 0);
    check_error([&] { open_input("config", dir / "secret.txt"); }, {"Permission denied"});
  }
}

TEST_CASE("the loaders name the reason a file cannot be opened") {
  TempDir dir;
  check_error([&] { load_safetensors(dir.str()); }, {"load_safetensors", "is a folder"});
  check_error([&] { load_safetensors(dir / "none.safetensors"); },
              {"load_safetensors", "no such file"});
}
