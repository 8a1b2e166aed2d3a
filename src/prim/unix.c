/* The OS layer for Linux and other Unix-like systems (see prim.h for the contracts). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "prim.h"
#include "../internal/internal.h"
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>
#include <time.h>
#include <pthread.h>
#if defined(__linux__)
#include <sys/random.h>
#endif

#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0
#endif

/* ---------------------------------------------------------------------------------------
   Memory
--------------------------------------------------------------------------------------- */
static bool unix_detect_overcommit(void) {
#if defined(__linux__)
  int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[32];
  ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  /* 0: heuristic, 1: always, 2: never overcommit */
  return (n >= 1 && (buf[0] == '0' || buf[0] == '1'));
#else
  return false;
#endif
}

void _mi_prim_mem_init(mi_os_mem_config_t* config) {
  long psize = sysconf(_SC_PAGESIZE);
  if (psize > 0) {
    config->page_size = (size_t)psize;
    config->alloc_granularity = (size_t)psize;
  }
  config->large_page_size = 2 * MI_MiB;
  config->has_overcommit = unix_detect_overcommit();
}

int _mi_prim_alloc(void* hint, size_t size, void** addr) {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  void* p = mmap(hint, size, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) {
    *addr = NULL;
    return errno;
  }
  *addr = p;
  return 0;
}

int _mi_prim_free(void* addr, size_t size) {
  return (munmap(addr, size) == -1 ? errno : 0);
}

int _mi_prim_reset(void* addr, size_t size) {
  return (madvise(addr, size, MADV_DONTNEED) == -1 ? errno : 0);
}

int _mi_prim_protect(void* addr, size_t size, bool protect) {
  int err = mprotect(addr, size, protect ? PROT_NONE : (PROT_READ | PROT_WRITE));
  return (err == -1 ? errno : 0);
}

/* ---------------------------------------------------------------------------------------
   Time and process information
--------------------------------------------------------------------------------------- */
mi_msecs_t _mi_prim_clock_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return ((mi_msecs_t)t.tv_sec * 1000) + ((mi_msecs_t)t.tv_nsec / 1000000);
}

static mi_msecs_t timeval_msecs(const struct timeval* tv) {
  return ((mi_msecs_t)tv->tv_sec * 1000) + ((mi_msecs_t)tv->tv_usec / 1000);
}

/* Current RSS from /proc/self/statm (second field, in pages), read without stdio. */
static size_t unix_current_rss(void) {
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[128];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  const char* s = buf;
  while (*s != 0 && *s != ' ') s++;   /* skip total size */
  while (*s == ' ') s++;
  size_t pages = 0;
  while (*s >= '0' && *s <= '9') { pages = pages*10 + (size_t)(*s - '0'); s++; }
  return pages * (size_t)sysconf(_SC_PAGESIZE);
}

void _mi_prim_process_info(mi_process_info_t* pinfo) {
  struct rusage rusage;
  getrusage(RUSAGE_SELF, &rusage);
  pinfo->utime = timeval_msecs(&rusage.ru_utime);
  pinfo->stime = timeval_msecs(&rusage.ru_stime);
  pinfo->page_faults = (size_t)rusage.ru_majflt;
  pinfo->peak_rss = (size_t)rusage.ru_maxrss * 1024;  /* Linux reports KiB */
  pinfo->current_rss = unix_current_rss();
  /* ru_maxrss and statm are sampled differently: keep the peak at least every current seen */
  static _Atomic(size_t) peak_seen;
  size_t peak = mi_atomic_load_relaxed(&peak_seen);
  while (peak < pinfo->current_rss && !mi_atomic_cas_weak_acq_rel(&peak_seen, &peak, pinfo->current_rss)) { }
  if (pinfo->peak_rss < pinfo->current_rss) pinfo->peak_rss = pinfo->current_rss;
  if (pinfo->peak_rss < peak) pinfo->peak_rss = peak;
}

/* ---------------------------------------------------------------------------------------
   Output, environment, randomness
--------------------------------------------------------------------------------------- */
void _mi_prim_out_stderr(const char* msg) {
  size_t len = strlen(msg);
  while (len > 0) {
    ssize_t n = write(STDERR_FILENO, msg, len);
    if (n <= 0) { if (n < 0 && errno == EINTR) continue; return; }
    msg += n;
    len -= (size_t)n;
  }
}

int _mi_prim_write_file(const char* path, const char* buf, size_t len) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  int err = 0;
  while (len > 0) {
    const ssize_t n = write(fd, buf, len);
    if (n < 0) { if (errno == EINTR) continue; err = errno; break; }
    buf += n;
    len -= (size_t)n;
  }
  if (close(fd) != 0 && err == 0) err = errno;
  return err;
}

extern char** environ;

static char mi_toupper(char c) { return (c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c); }

bool _mi_prim_getenv(const char* name, char* result, size_t result_size) {
  if (name == NULL || result == NULL || result_size == 0) return false;
  char** env = environ;
  if (env == NULL) return false;   /* too early; options are read again later */
  size_t len = strlen(name);
  for (size_t i = 0; env[i] != NULL; i++) {
    const char* s = env[i];
    size_t j = 0;
    while (j < len && s[j] != 0 && mi_toupper(s[j]) == mi_toupper(name[j])) j++;
    if (j == len && s[j] == '=') {
      const char* val = s + len + 1;
      size_t k = 0;
      while (val[k] != 0 && k + 1 < result_size) { result[k] = val[k]; k++; }
      result[k] = 0;
      return true;
    }
  }
  return false;
}

bool _mi_prim_random_buf(void* buf, size_t buf_len) {
#if defined(__linux__)
  uint8_t* p = (uint8_t*)buf;
  while (buf_len > 0) {
    long n = syscall(SYS_getrandom, p, buf_len, GRND_NONBLOCK);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    p += n;
    buf_len -= (size_t)n;
  }
  return true;
#else
  (void)buf; (void)buf_len;
  return false;
#endif
}

/* ---------------------------------------------------------------------------------------
   Thread exit: a pthread key whose destructor receives the thread's backing heap.
--------------------------------------------------------------------------------------- */
static pthread_key_t mi_heap_key;
static _Atomic(int)  mi_heap_key_state;   /* 0: none, 1: created */

static void mi_pthread_done(void* value) {
  if (value != NULL) _mi_thread_done((mi_heap_t*)value);
}

void _mi_prim_thread_init_auto_done(void) {
  if (mi_atomic_load_acquire(&mi_heap_key_state) == 0) {
    if (pthread_key_create(&mi_heap_key, &mi_pthread_done) == 0) {
      mi_atomic_store_release(&mi_heap_key_state, 1);
    }
  }
}

void _mi_prim_thread_done_auto_done(void) {
  /* The key is kept: threads may still exit (and free) after the process is done. */
}

void _mi_prim_thread_associate_default_heap(mi_heap_t* heap) {
  if (mi_atomic_load_acquire(&mi_heap_key_state) == 1) {
    pthread_setspecific(mi_heap_key, heap);
  }
}

bool _mi_prim_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void)) {
  return (pthread_atfork(prepare, parent, child) == 0);
}
