// What the operating system is asked for, in one place: Linux has calls of its own for some of
// it, and every other system (macOS, the BSDs) gets a portable fallback here, so no other folder
// names an operating system. This is the lowest floor: it includes only the C++ and C libraries.
#pragma once

#include <cstddef>

namespace anatomy::platform {

// Takes an exclusive lock on the open file `fd` without waiting: false when another open file
// holds it (in this process or another). The lock goes when `fd` is closed or the process ends,
// however it ends.
bool try_lock_file(int fd);

// The same, waiting until the lock is free: false only on an error.
bool lock_file(int fd);

// Asks that the memory at `p` (bytes long, on a 2 MiB boundary) be backed by huge pages, so that
// a first touch faults in 2 MiB at once. Advice only: where the system has no such advice this
// does nothing.
void advise_huge_pages(void* p, size_t bytes);

// The processors this process may run on: on Linux its affinity mask (taskset, a container's
// cpuset), elsewhere every online processor. At least 1.
int usable_cpus();

// The bytes of memory this process can use: the machine's physical memory, capped by a limit on
// the process's address space (ulimit -v). 0 when the system does not say.
double usable_memory();

// The fallbacks of the calls above that Linux answers with calls of its own, built on Linux too
// so that the tests run them there.
namespace portable {
int usable_cpus();
}  // namespace portable

}  // namespace anatomy::platform
