#include "platform/platform.hpp"

#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace anatomy::platform {

// flock is BSD's, and Linux and macOS have it too. Its lock belongs to the open file, so a second
// open() of the same file in the same process is refused as another process would be (POSIX's
// fcntl locks belong to the process and would let it through).
bool try_lock_file(int fd) { return ::flock(fd, LOCK_EX | LOCK_NB) == 0; }

bool lock_file(int fd) {
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) return false;
  }
  return true;
}

void advise_huge_pages(void* p, size_t bytes) {
#if defined(MADV_HUGEPAGE)
  ::madvise(p, bytes, MADV_HUGEPAGE);  // without transparent huge pages nothing changes
#else
  (void)p, (void)bytes;
#endif
}

int portable::usable_cpus() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

int usable_cpus() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
  return portable::usable_cpus();
}

double usable_memory() {
  double bytes = 0;
#if defined(_SC_PHYS_PAGES)
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) bytes = static_cast<double>(pages) * static_cast<double>(page);
#endif
  rlimit cap{};
  if (::getrlimit(RLIMIT_AS, &cap) == 0 && cap.rlim_cur != RLIM_INFINITY) {
    const auto limit = static_cast<double>(cap.rlim_cur);
    bytes = bytes > 0 ? std::min(bytes, limit) : limit;
  }
  return bytes;
}

}  // namespace anatomy::platform
