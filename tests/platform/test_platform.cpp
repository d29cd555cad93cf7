// The operating system's calls behind platform/platform.hpp, and the portable fallbacks that
// other systems get, run here too.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "helpers.hpp"
#include "platform/platform.hpp"

using namespace anatomy;
using namespace anatomy::testing;

TEST_CASE("a file lock is held by one open file at a time, and closing the file frees it") {
  const std::string path = (temp_root() / "anatomy_platform_lock").string();
  const int first = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int second = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(first >= 0);
  REQUIRE(second >= 0);
  CHECK(platform::try_lock_file(first));
  // Refused inside one process too: RunDir::lock relies on it when a test holds the lock.
  CHECK_FALSE(platform::try_lock_file(second));
  ::close(first);
  CHECK(platform::lock_file(second));
  ::close(second);
}

TEST_CASE("the processors and the memory a process can use are counted") {
  const int cpus = platform::usable_cpus();
  CHECK(cpus >= 1);
  // The affinity mask is a subset of the online processors, which the fallback counts.
  CHECK(cpus <= platform::portable::usable_cpus());
  CHECK(platform::portable::usable_cpus() >= 1);
  CHECK(platform::usable_memory() > 0);
}

TEST_CASE("huge-page advice on an aligned buffer changes nothing a program sees") {
  constexpr size_t kBytes = size_t{4} << 20;
  void* p = std::aligned_alloc(size_t{2} << 20, kBytes);
  REQUIRE(p != nullptr);
  platform::advise_huge_pages(p, kBytes);
  auto* bytes = static_cast<unsigned char*>(p);
  bytes[0] = 1;
  bytes[kBytes - 1] = 2;
  CHECK(bytes[0] + bytes[kBytes - 1] == 3);
  std::free(p);
}
