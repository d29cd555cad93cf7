// A stand-in for a kill at a random moment that a test can repeat exactly: preloaded
// (LD_PRELOAD) into a command, it counts the file operations the command makes (open, write,
// sync, close, rename, mkdir) and kills the process with SIGKILL at the one numbered
// ANATOMY_KILL_AT_CALL. With ANATOMY_COUNT_CALLS_TO=FILE it writes the number of operations the
// whole command made to FILE when it ends, so a test knows which moments there are.
#include <dlfcn.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace {

long calls = 0;

void moment() {
  static long kill_at = -1;
  if (kill_at < 0) {
    const char* at = getenv("ANATOMY_KILL_AT_CALL");
    kill_at = at ? atol(at) : 0;
  }
  if (++calls == kill_at) raise(SIGKILL);
}

template <typename F>
F real(F, const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

#define REAL(name) real(&name, #name)

extern "C" {

FILE* fopen(const char* path, const char* mode) {
  moment();
  return REAL(fopen)(path, mode);
}
FILE* fopen64(const char* path, const char* mode) {
  moment();
  return REAL(fopen64)(path, mode);
}
size_t fwrite(const void* data, size_t size, size_t n, FILE* f) {
  moment();
  return REAL(fwrite)(data, size, n, f);
}
int fsync(int fd) {
  moment();
  return REAL(fsync)(fd);
}
int fclose(FILE* f) {
  moment();
  return REAL(fclose)(f);
}
int rename(const char* from, const char* to) {
  moment();
  return REAL(rename)(from, to);
}
int mkdir(const char* path, mode_t mode) {
  moment();
  return REAL(mkdir)(path, mode);
}

__attribute__((destructor)) static void report() {
  const char* to = getenv("ANATOMY_COUNT_CALLS_TO");
  if (!to) return;
  FILE* f = REAL(fopen)(to, "w");
  if (!f) return;
  fprintf(f, "%ld\n", calls);
  REAL(fclose)(f);
}

}  // extern "C"
