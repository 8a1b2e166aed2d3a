/* SPDX-License-Identifier: MIT */
/* The OS layer for Linux, macOS and other Unix-like systems (see prim.h for the contracts).
   What macOS does differently is in `#if defined(__APPLE__)` blocks next to the POSIX code:
   mapping flags and 2 MiB superpages, decommit and reset, process figures from Mach, the
   thread id, the environment, randomness (docs/platforms.md, section macOS). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "prim.h"
#include "../internal/base.h"
#include "../internal/heap.h"   /* hook: _mi_thread_done at thread exit */
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>
#include <fcntl.h>
#include <time.h>
#include <pthread.h>
#include <signal.h>
#include <limits.h>            /* PTHREAD_STACK_MIN */
#include <dlfcn.h>
#if defined(__APPLE__)
#include <mach/mach.h>            /* task_info */
#include <mach/vm_statistics.h>   /* VM_FLAGS_SUPERPAGE_SIZE_2MB */
#include <crt_externs.h>          /* _NSGetEnviron */
#else
#include <sys/syscall.h>
#include <link.h>
#endif
#if defined(__linux__)
#include <sys/prctl.h>            /* PR_SET_NAME */
#endif
#if defined(__linux__) || defined(__APPLE__)
#include <sys/random.h>       /* (getentropy on macOS) */
#endif

#if defined(__APPLE__) || !defined(MAP_NORESERVE)
#undef  MAP_NORESERVE
#define MAP_NORESERVE 0           /* (macOS defines it but ignores it: it never reserves swap) */
#endif
#if !defined(MAP_ANONYMOUS) && defined(MAP_ANON)
#define MAP_ANONYMOUS MAP_ANON
#endif

#if MI_TRACK_ASAN && defined(__linux__)
/* AddressSanitizer intercepts these; its interceptors call the real function through a pointer
   that it sets while it initialises, and during that it may already call malloc (dlsym's error
   path allocates): our first malloc then jumped to NULL. The ASan tracking build goes to the
   kernel directly instead. */
static void* mi_sys_mmap(void* addr, size_t size, int prot, int flags, int fd, off_t offset) {
  return (void*)syscall(SYS_mmap, addr, size, prot, flags, fd, offset);
}
static int mi_sys_mprotect(void* addr, size_t size, int prot) { return (int)syscall(SYS_mprotect, addr, size, prot); }
static int mi_sys_clock_gettime(clockid_t clock, struct timespec* t) { return (int)syscall(SYS_clock_gettime, clock, t); }
static ssize_t mi_sys_read(int fd, void* buf, size_t size) { return (ssize_t)syscall(SYS_read, fd, buf, size); }
static ssize_t mi_sys_write(int fd, const void* buf, size_t size) { return (ssize_t)syscall(SYS_write, fd, buf, size); }
#define mmap           mi_sys_mmap
#define mprotect       mi_sys_mprotect
#define clock_gettime  mi_sys_clock_gettime
#define read           mi_sys_read
#define write          mi_sys_write
#endif

/* ---------------------------------------------------------------------------------------
   Memory
--------------------------------------------------------------------------------------- */
#if defined(__linux__)
/* Read a small decimal or text file from /proc or /sys into buf (NUL-terminated), no stdio.
   errno is kept: these probes run on first need, inside malloc, which must not change it. */
static ssize_t unix_read_small_file(const char* path, char* buf, size_t size) {
  const int saved_errno = errno;
  ssize_t n = -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    n = read(fd, buf, size - 1);
    close(fd);
  }
  errno = saved_errno;
  if (n < 0) return -1;
  buf[n] = 0;
  return n;
}

/* Does path exist? errno is kept (as above). */
static bool unix_path_exists(const char* path) {
  const int saved_errno = errno;
  const bool exists = (access(path, F_OK) == 0);
  errno = saved_errno;
  return exists;
}

static size_t unix_parse_size(const char* s) {
  size_t v = 0;
  while (*s >= '0' && *s <= '9') { v = v*10 + (size_t)(*s - '0'); s++; }
  return v;
}
#endif

/* No system call here: a process that never allocates (or exits soon) should not pay for
   /proc or /sys reads; those are made on first need (below). */
void _mi_prim_mem_init(mi_os_mem_config_t* config) {
#if defined(__x86_64__) || defined(__i386__)
  const long psize = 4096;   /* the only base page size of x86 */
#else
  const long psize = sysconf(_SC_PAGESIZE);
#endif
  if (psize > 0) {
    config->page_size = (size_t)psize;
    config->alloc_granularity = (size_t)psize;
  }
  config->large_page_size = 2 * MI_MiB;
}

bool _mi_prim_has_overcommit(void) {
#if defined(__linux__)
  char buf[32];
  /* 0: heuristic, 1: always, 2: never overcommit */
  if (unix_read_small_file("/proc/sys/vm/overcommit_memory", buf, sizeof(buf)) <= 0) return false;
  return (buf[0] == '0' || buf[0] == '1');
#elif defined(__APPLE__)
  return true;    /* no commit charge: untouched anonymous memory costs nothing */
#else
  return false;
#endif
}

#if defined(__linux__) && defined(MAP_HUGETLB)
/* Are there free pre-allocated 2 MiB hugetlb pages (vm.nr_hugepages)? Read on the first
   request for large pages: 0 unknown, 1 no, 2 yes. */
static _Atomic(int) unix_hugetlb_free;

static bool unix_has_hugetlb_free(void) {
  int state = mi_atomic_load_relaxed(&unix_hugetlb_free);
  if (mi_unlikely(state == 0)) {
    char buf[64];
    const bool any = (unix_read_small_file("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", buf, sizeof(buf)) > 0
                      && unix_parse_size(buf) > 0);
    state = (any ? 2 : 1);
    mi_atomic_store_relaxed(&unix_hugetlb_free, state);
  }
  return (state == 2);
}
#endif

int _mi_prim_alloc(void* hint, size_t size, bool commit, bool allow_large, bool* is_large, void** addr) {
  *is_large = false;
  (void)allow_large;   /* (no large pages on some targets) */
  void* p = MAP_FAILED;
#if defined(__linux__) && defined(MAP_HUGETLB)
  /* 2 MiB hugetlb pages only where the administrator configured a pool of them */
  if (allow_large && commit && (size % (2*MI_MiB)) == 0) {
    if (unix_has_hugetlb_free()) {
      p = mmap(hint, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);   /* no MAP_NORESERVE: the pages must exist now, not fault with SIGBUS later */
      if (p != MAP_FAILED) *is_large = true;
    }
  }
#elif defined(__APPLE__) && defined(__x86_64__) && defined(VM_FLAGS_SUPERPAGE_SIZE_2MB)
  /* 2 MiB superpages: asked for through mmap's fd argument; they are wired (never paged
     out or purged), so large like hugetlb pages. The kernel fails the call when it has none. */
  if (allow_large && commit && (size % (2*MI_MiB)) == 0) {
    p = mmap(hint, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, VM_FLAGS_SUPERPAGE_SIZE_2MB, 0);
    if (p != MAP_FAILED) *is_large = true;
  }
#endif
  if (p == MAP_FAILED) {
    const int prot = (commit ? PROT_READ | PROT_WRITE : PROT_NONE);
    p = mmap(hint, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      *addr = NULL;
      return errno;
    }
#if defined(MADV_HUGEPAGE)
    /* transparent huge pages only on request (a 2 MiB page costs 2 MiB of RSS when touched) */
    if (allow_large && size >= 2*MI_MiB) {
      (void)madvise(p, size, MADV_HUGEPAGE);   /* a hint: the memory stays purgeable */
    }
#endif
  }
  *addr = p;
  return 0;
}

int _mi_prim_free(void* addr, size_t size) {
  return (munmap(addr, size) == -1 ? errno : 0);
}

int _mi_prim_commit(void* addr, size_t size) {
  return (mprotect(addr, size, PROT_READ | PROT_WRITE) == -1 ? errno : 0);
}

#if defined(__APPLE__)
/* macOS's MADV_DONTNEED and MADV_FREE neither free the pages at once nor zero them: the range
   is replaced by fresh anonymous memory instead (mmap MAP_FIXED), which drops the old pages
   now (RSS and the footprint fall) and reads as zero. The protection is set anew, so a guard
   page inside the range would be lifted: no caller decommits over one (without guard markers
   the only guards are in a segment header's info_size, which is never purged). */
int _mi_prim_decommit(void* addr, size_t size, bool protect) {
  const int prot = (protect ? PROT_NONE : PROT_READ | PROT_WRITE);
  void* p = mmap(addr, size, prot, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return errno;
  return (p == addr ? 0 : EINVAL);
}

/* MADV_FREE_REUSABLE: the kernel may take the pages, and they leave the task's footprint at
   once (Activity Monitor's "Memory"; the resident size falls only when they are taken). The
   OS expects MADV_FREE_REUSE before such memory is used again, for its accounting only (the
   contents are as after MADV_FREE either way): prim.h has no primitive for that moment yet,
   so the footprint may undercount reused memory. MADV_FREE where REUSABLE is refused. */
int _mi_prim_reset(void* addr, size_t size) {
#if defined(MADV_FREE_REUSABLE)
  if (madvise(addr, size, MADV_FREE_REUSABLE) == 0) return 0;
  if (errno != EINVAL) return errno;
#endif
  return (madvise(addr, size, MADV_FREE) == -1 ? errno : 0);
}
#else
int _mi_prim_decommit(void* addr, size_t size, bool protect) {
  int err = (madvise(addr, size, MADV_DONTNEED) == -1 ? errno : 0);
  if (protect && err == 0) {
    /* back to inaccessible: also returns the commit charge on strict-overcommit systems */
    err = (mprotect(addr, size, PROT_NONE) == -1 ? errno : 0);
  }
  return err;
}

int _mi_prim_reset(void* addr, size_t size) {
#if defined(MADV_FREE)
  static _Atomic(int) no_madv_free;
  if (mi_atomic_load_relaxed(&no_madv_free) == 0) {
    if (madvise(addr, size, MADV_FREE) == 0) return 0;
    if (errno != EINVAL) return errno;
    mi_atomic_store_relaxed(&no_madv_free, 1);   /* kernel without MADV_FREE */
  }
#endif
  return (madvise(addr, size, MADV_DONTNEED) == -1 ? errno : 0);
}
#endif

#if defined(__APPLE__)
const char* _mi_prim_purge_method(bool decommit) {
  return (decommit ? "mmap of fresh memory" : "MADV_FREE_REUSABLE");
}
#else
const char* _mi_prim_purge_method(bool decommit) {
  return (decommit ? "MADV_DONTNEED" : "MADV_FREE");
}
#endif

#if defined(__linux__)
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL  102
#define MADV_GUARD_REMOVE   103
#endif
int _mi_prim_guard(void* addr, size_t size, bool install) {
  return (madvise(addr, size, install ? MADV_GUARD_INSTALL : MADV_GUARD_REMOVE) == -1 ? errno : 0);
}
#else
int _mi_prim_guard(void* addr, size_t size, bool install) {
  (void)addr; (void)size; (void)install;
  return EINVAL;
}
#endif

int _mi_prim_protect(void* addr, size_t size, bool protect) {
  int err = mprotect(addr, size, protect ? PROT_NONE : (PROT_READ | PROT_WRITE));
  return (err == -1 ? errno : 0);
}

/* ---------------------------------------------------------------------------------------
   Huge (1 GiB) OS pages and NUMA
--------------------------------------------------------------------------------------- */
#if defined(__linux__)
#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#ifndef MPOL_PREFERRED
#define MPOL_PREFERRED 1
#endif

int _mi_prim_alloc_huge_os_pages(void* hint, size_t size, int numa_node, void** addr) {
  *addr = NULL;
#if defined(MAP_HUGETLB)
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (30 << MAP_HUGE_SHIFT);   /* reserved now (no MAP_NORESERVE) */
#if defined(MAP_FIXED_NOREPLACE)
  if (hint != NULL) flags |= MAP_FIXED_NOREPLACE;
#endif
  void* p = mmap(hint, size, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) return errno;
  if (hint != NULL && p != hint) { munmap(p, size); return EEXIST; }
#if defined(SYS_mbind)
  if (numa_node >= 0 && numa_node < 8*(int)sizeof(unsigned long)) {
    unsigned long mask = 1UL << numa_node;
    if (syscall(SYS_mbind, p, size, MPOL_PREFERRED, &mask, 8*sizeof(unsigned long), 0) != 0) {
      _mi_warning_message("failed to bind huge (1 GiB) pages to numa node %d (error %d)\n", numa_node, errno);
    }
  }
#else
  (void)numa_node;
#endif
  *addr = p;
  return 0;
#else
  (void)hint; (void)size; (void)numa_node;
  return ENOTSUP;
#endif
}

size_t _mi_prim_numa_node(void) {
#if defined(SYS_getcpu)
  unsigned long cpu = 0, node = 0;
  if (syscall(SYS_getcpu, &cpu, &node, NULL) != 0) return 0;
  return (size_t)node;
#else
  return 0;
#endif
}

/* Nodes from /sys/devices/system/node/possible ("0" or "0-3"); probing directories would need
   opendir, which allocates. Asked on the first allocation: a machine without a node 1 (nearly
   every one) answers with one system call instead of three (node numbers with a gap before 1
   count as one node: the NUMA preference only, never correctness, depends on the count). */
size_t _mi_prim_numa_node_count(void) {
  char buf[64];
  if (!unix_path_exists("/sys/devices/system/node/node1")) return 1;
  if (unix_read_small_file("/sys/devices/system/node/possible", buf, sizeof(buf)) <= 0) return 1;
  const char* s = buf;
  size_t last = unix_parse_size(s);
  while (*s != 0 && *s != '\n') {
    if (*s == '-' || *s == ',') last = unix_parse_size(s + 1);
    s++;
  }
  return last + 1;
}
#else
int _mi_prim_alloc_huge_os_pages(void* hint, size_t size, int numa_node, void** addr) {
  (void)hint; (void)size; (void)numa_node; *addr = NULL; return ENOTSUP;
}
size_t _mi_prim_numa_node(void) { return 0; }
size_t _mi_prim_numa_node_count(void) { return 1; }
#endif

/* ---------------------------------------------------------------------------------------
   Time and process information
--------------------------------------------------------------------------------------- */
mi_msecs_t _mi_prim_clock_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return ((mi_msecs_t)t.tv_sec * 1000) + ((mi_msecs_t)t.tv_nsec / 1000000);
}

void _mi_prim_thread_yield(void) {
  sched_yield();   /* (cannot fail on Linux, nor set errno) */
}

void _mi_prim_thread_sleep(size_t usecs) {
  const int saved_errno = errno;   /* (EINTR: a signal ended it early, as the contract allows) */
  struct timespec t;
  t.tv_sec = (time_t)(usecs / 1000000);
  t.tv_nsec = (long)(usecs % 1000000) * 1000L;
  nanosleep(&t, NULL);
  errno = saved_errno;
}

static mi_msecs_t timeval_msecs(const struct timeval* tv) {
  return ((mi_msecs_t)tv->tv_sec * 1000) + ((mi_msecs_t)tv->tv_usec / 1000);
}

#if defined(__APPLE__)
/* No /proc: current and peak resident size from Mach (0 when unknown). */
static void unix_rss(size_t* current, size_t* peak) {
  struct mach_task_basic_info info;
  mach_msg_type_number_t count = MACH_TASK_BASIC_INFO_COUNT;
  *current = 0; *peak = 0;
  if (task_info(mach_task_self(), MACH_TASK_BASIC_INFO, (task_info_t)&info, &count) == KERN_SUCCESS) {
    *current = (size_t)info.resident_size;
    *peak = (size_t)info.resident_size_max;
  }
}
#define MI_MAXRSS_UNIT  1      /* getrusage's ru_maxrss: bytes on macOS */
#else
/* Read a small /proc file into buf (NUL-terminated) without stdio; false if unreadable. */
static bool unix_read_proc(const char* path, char* buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  return true;
}

/* Current RSS from /proc/self/statm (second field, in pages). */
static size_t unix_current_rss(void) {
  char buf[128];
  if (!unix_read_proc("/proc/self/statm", buf, sizeof(buf))) return 0;
  const char* s = buf;
  while (*s != 0 && *s != ' ') s++;   /* skip total size */
  while (*s == ' ') s++;
  size_t pages = 0;
  while (*s >= '0' && *s <= '9') { pages = pages*10 + (size_t)(*s - '0'); s++; }
  return pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* Peak RSS of this process image from /proc/self/status (VmHWM, in KiB), 0 if unavailable.
   getrusage's ru_maxrss is not used first: it survives execve, so a program started by a
   bigger one (python3 running a tool) would report its parent's peak. */
static size_t unix_peak_rss(void) {
  char buf[4096];
  if (!unix_read_proc("/proc/self/status", buf, sizeof(buf))) return 0;
  for (const char* s = buf; *s != 0; s++) {
    if ((s == buf || s[-1] == '\n') && strncmp(s, "VmHWM:", 6) == 0) {
      s += 6;
      while (*s == ' ' || *s == '\t') s++;
      size_t kib = 0;
      while (*s >= '0' && *s <= '9') { kib = kib*10 + (size_t)(*s - '0'); s++; }
      return kib * 1024;
    }
  }
  return 0;
}

static void unix_rss(size_t* current, size_t* peak) {
  *current = unix_current_rss();
  *peak = unix_peak_rss();
}
#define MI_MAXRSS_UNIT  1024   /* getrusage's ru_maxrss: KiB on Linux */
#endif

void _mi_prim_process_info(mi_process_info_t* pinfo) {
  struct rusage rusage;
  getrusage(RUSAGE_SELF, &rusage);
  pinfo->utime = timeval_msecs(&rusage.ru_utime);
  pinfo->stime = timeval_msecs(&rusage.ru_stime);
  pinfo->page_faults = (size_t)rusage.ru_majflt;
  unix_rss(&pinfo->current_rss, &pinfo->peak_rss);
  if (pinfo->peak_rss == 0) pinfo->peak_rss = (size_t)rusage.ru_maxrss * MI_MAXRSS_UNIT;
  /* the peak and current figures are sampled differently: keep the peak at least every current seen */
  static _Atomic(size_t) peak_seen;
  size_t peak = mi_atomic_load_relaxed(&peak_seen);
  while (peak < pinfo->current_rss && !mi_atomic_cas_weak_acq_rel(&peak_seen, &peak, pinfo->current_rss)) { }
  if (pinfo->peak_rss < pinfo->current_rss) pinfo->peak_rss = pinfo->current_rss;
  if (pinfo->peak_rss < peak) pinfo->peak_rss = peak;
}

bool _mi_prim_job_limits(size_t* process_limit, size_t* job_limit) {
  *process_limit = 0;   /* no job objects: the cgroup's files are the limit (src/limit.c) */
  *job_limit = 0;
  return false;
}

int _mi_prim_read_file(const char* path, char* buf, size_t size, size_t* len) {
  *len = 0;
  if (size == 0) return EINVAL;
  buf[0] = 0;
  const int saved_errno = errno;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  int err = (fd < 0 ? errno : 0);
  while (err == 0 && *len < size - 1) {
    const ssize_t n = read(fd, buf + *len, size - 1 - *len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    if (n <= 0) break;
    *len += (size_t)n;
  }
  if (fd >= 0) close(fd);
  errno = saved_errno;
  buf[*len] = 0;
  return err;
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

int _mi_prim_shared_map(const char* path, size_t size, void** addr) {
  *addr = NULL;
  const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  int err = 0;
  if (ftruncate(fd, (off_t)size) != 0) err = errno;
  if (err == 0) {
    void* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) err = errno;
    else *addr = p;
  }
  close(fd);
  if (err != 0) unlink(path);
  return err;
}

void _mi_prim_shared_unmap(const char* path, void* addr, size_t size, bool remove) {
  if (addr != NULL) munmap(addr, size);
  if (remove) unlink(path);
}

long _mi_prim_process_id(void) {
  return (long)getpid();
}

long _mi_prim_thread_os_id(void) {
#if defined(__APPLE__)
  uint64_t tid = 0;   /* the system-wide id (ps -M, Instruments), not the Mach port */
  pthread_threadid_np(NULL, &tid);
  return (long)tid;
#else
  return (long)syscall(SYS_gettid);
#endif
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

#if defined(__APPLE__)
/* `environ` is only defined for the main program on macOS, not in a dylib */
static char** unix_environ(void) { return *_NSGetEnviron(); }
#else
extern char** environ;
static char** unix_environ(void) { return environ; }
#endif

static char mi_toupper(char c) { return (c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c); }

bool _mi_prim_getenv(const char* name, char* result, size_t result_size) {
  if (name == NULL || result == NULL || result_size == 0) return false;
  char** env = unix_environ();
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

#if defined(__GLIBC__)   /* glibc: _r_debug with link_map (not in musl) */
/* Does the loaded object `map` define the function `name`? Its dynamic symbol table is
   searched through its hash table (GNU or SysV), read in place: no dlsym, which may allocate
   or take locks, and which answers a PLT stub of a non-PIE program (python3 takes malloc's
   address) where the call really goes to the next definition. */
static uintptr_t mi_dyn_ptr(const struct link_map* map, uintptr_t ptr) {
  return (ptr < (uintptr_t)map->l_addr ? ptr + (uintptr_t)map->l_addr : ptr);   /* relocated or not */
}

static void* mi_elf_defines(const struct link_map* map, const char* name) {
  const ElfW(Sym)* symtab = NULL;
  const char* strtab = NULL;
  const uint32_t* gnu_hash = NULL;
  const uint32_t* sysv_hash = NULL;
  if (map->l_ld == NULL) return NULL;
  for (const ElfW(Dyn)* d = map->l_ld; d->d_tag != DT_NULL; d++) {
    if (d->d_tag == DT_SYMTAB) symtab = (const ElfW(Sym)*)mi_dyn_ptr(map, d->d_un.d_ptr);
    else if (d->d_tag == DT_STRTAB) strtab = (const char*)mi_dyn_ptr(map, d->d_un.d_ptr);
    else if (d->d_tag == DT_GNU_HASH) gnu_hash = (const uint32_t*)mi_dyn_ptr(map, d->d_un.d_ptr);
    else if (d->d_tag == DT_HASH) sysv_hash = (const uint32_t*)mi_dyn_ptr(map, d->d_un.d_ptr);
  }
  if (symtab == NULL || strtab == NULL) return NULL;
  const ElfW(Sym)* found = NULL;
  if (gnu_hash != NULL) {
    uint32_t h = 5381;
    for (const char* c = name; *c != 0; c++) h = h * 33 + (uint8_t)*c;
    const uint32_t nbuckets = gnu_hash[0], symoffset = gnu_hash[1], bloom_size = gnu_hash[2];
    if (nbuckets == 0) return NULL;
    const uint32_t* buckets = (const uint32_t*)((const ElfW(Addr)*)(gnu_hash + 4) + bloom_size);
    const uint32_t* chain = buckets + nbuckets;
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset) return NULL;
    for (;; i++) {
      const uint32_t h2 = chain[i - symoffset];
      if ((h | 1) == (h2 | 1) && strcmp(strtab + symtab[i].st_name, name) == 0) { found = &symtab[i]; break; }
      if ((h2 & 1) != 0) break;
    }
  }
  else if (sysv_hash != NULL) {
    uint32_t h = 0;
    for (const char* c = name; *c != 0; c++) {
      h = (h << 4) + (uint8_t)*c;
      const uint32_t g = h & 0xf0000000u;
      if (g != 0) h ^= g >> 24;
      h &= ~g;
    }
    const uint32_t nbucket = sysv_hash[0];
    const uint32_t* bucket = sysv_hash + 2;
    const uint32_t* chain = bucket + nbucket;
    if (nbucket == 0) return NULL;
    for (uint32_t i = bucket[h % nbucket]; i != STN_UNDEF; i = chain[i]) {
      if (strcmp(strtab + symtab[i].st_name, name) == 0) { found = &symtab[i]; break; }
    }
  }
  if (found == NULL || found->st_shndx == SHN_UNDEF || found->st_value == 0) return NULL;
  const int type = ELF64_ST_TYPE(found->st_info), bind = ELF64_ST_BIND(found->st_info);
  if (type != STT_FUNC || (bind != STB_GLOBAL && bind != STB_WEAK)) return NULL;   /* (an ifunc is its resolver) */
  return (void*)((uintptr_t)map->l_addr + (uintptr_t)found->st_value);
}

/* the load address of the object whose segments hold `self` (dl_iterate_phdr: dladdr1 would
   also look for the nearest symbol, about 10,000 instructions in a large library) */
typedef struct mi_addr_owner_s { uintptr_t addr; uintptr_t base; bool found; } mi_addr_owner_t;
static int mi_addr_owner_find(struct dl_phdr_info* info, size_t size, void* arg) {
  (void)size;
  mi_addr_owner_t* const q = (mi_addr_owner_t*)arg;
  for (size_t i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)* const ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    const uintptr_t lo = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
    if (q->addr >= lo && q->addr - lo < ph->p_memsz) { q->base = (uintptr_t)info->dlpi_addr; q->found = true; return 1; }
  }
  return 0;
}
#endif

int _mi_prim_symbol_provider(const char* name, const void* self, void** addr, char* path, size_t path_size) {
  if (path_size > 0) path[0] = 0;
  *addr = NULL;
#if !defined(__GLIBC__)
  /* glibc's _r_debug (musl has none): the provider cannot be named */
  (void)name; (void)self;
  return -1;
#else
  mi_addr_owner_t owner = { (uintptr_t)self, 0, false };
  dl_iterate_phdr(&mi_addr_owner_find, &owner);
  if (!owner.found) return -1;
  /* the objects loaded at start-up, in load order: the program, LD_PRELOAD, then the needed
     libraries; calls bind to the first definition in this order (the vDSO defines nothing) */
  for (struct link_map* map = _r_debug.r_map; map != NULL; map = map->l_next) {
    if (map->l_name != NULL && strstr(map->l_name, "linux-vdso") != NULL) continue;
    *addr = mi_elf_defines(map, name);
    if (*addr == NULL) continue;
    if ((uintptr_t)map->l_addr == owner.base) return 1;   /* (load addresses differ between objects) */
    const char* fname = (map->l_name != NULL && map->l_name[0] != 0 ? map->l_name : "the program itself");
    size_t k = 0;
    while (fname[k] != 0 && k + 1 < path_size) { path[k] = fname[k]; k++; }
    if (path_size > 0) path[k] = 0;
    return 0;
  }
  return -1;
#endif
}

void* _mi_prim_loaded_function(const char* name) {
#if defined(__GLIBC__)
  for (struct link_map* map = _r_debug.r_map; map != NULL; map = map->l_next) {
    void* const addr = mi_elf_defines(map, name);
    if (addr != NULL) return addr;
  }
#endif
  (void)name;
  return NULL;
}

#if MI_PROF_ENTRIES
/* Rebinding PLT slots (the profiler's counted entry points, override.c). A call from a loaded
   object to an imported function jumps through the object's slot for it (a JUMP_SLOT
   relocation): it holds the bound definition, or with lazy binding the object's own PLT code
   until the first call binds it. Slots that are bound to from[k], or not bound yet (they point
   into their own object), are set to to[k]; a slot bound to another definition is left alone.
   Slots in a RELRO segment (read-only once relocated) are made writable for the store and
   read-only again. The store is one aligned word: a concurrent call takes the old target or the
   new one, both valid. Calls that take another way (-fno-plt code calls through a GLOB_DAT
   slot, function pointers, objects loaded later, this library) keep from[k]. */
#if defined(__x86_64__)
#define MI_R_JUMP_SLOT  R_X86_64_JUMP_SLOT
#elif defined(__aarch64__)
#define MI_R_JUMP_SLOT  R_AARCH64_JUMP_SLOT
#elif defined(__riscv)
#define MI_R_JUMP_SLOT  R_RISCV_JUMP_SLOT
#endif

typedef struct mi_rebind_s {
  const char* const* names;
  void* const*       from;
  void* const*       to;
  size_t             n;
  size_t             count;   /* slots rewritten */
} mi_rebind_t;

static bool mi_rebind_store(void** slot, void* target, uintptr_t relro_start, uintptr_t relro_end) {
  const uintptr_t a = (uintptr_t)slot;
  if (a < relro_start || a >= relro_end) { __atomic_store_n(slot, target, __ATOMIC_RELEASE); return true; }
  const uintptr_t psize = (uintptr_t)sysconf(_SC_PAGESIZE);
  void* const page = (void*)(a & ~(psize - 1));
  if (mprotect(page, psize, PROT_READ | PROT_WRITE) != 0) return false;
  __atomic_store_n(slot, target, __ATOMIC_RELEASE);
  mprotect(page, psize, PROT_READ);
  return true;
}

static int mi_rebind_object(struct dl_phdr_info* info, size_t info_size, void* arg) {
  (void)info_size;
  mi_rebind_t* const rb = (mi_rebind_t*)arg;
  const uintptr_t base = (uintptr_t)info->dlpi_addr;
  const ElfW(Dyn)* dyn = NULL;
  uintptr_t relro_start = 0, relro_end = 0, lo = UINTPTR_MAX, hi = 0;
  for (size_t i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)* const ph = &info->dlpi_phdr[i];
    const uintptr_t start = base + (uintptr_t)ph->p_vaddr;
    if (ph->p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn)*)start;
    else if (ph->p_type == PT_GNU_RELRO) {
      /* the pages the loader made read-only: its bounds rounded down, as glibc rounds them (a
         last partial page stays writable, and may hold other data: never mprotect it) */
      const uintptr_t pmask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
      relro_start = start & ~pmask;
      relro_end = (start + (uintptr_t)ph->p_memsz) & ~pmask;
    }
    else if (ph->p_type == PT_LOAD) {
      if (start < lo) lo = start;
      if (start + (uintptr_t)ph->p_memsz > hi) hi = start + (uintptr_t)ph->p_memsz;
    }
  }
  if (dyn == NULL || ((uintptr_t)&mi_rebind_object >= lo && (uintptr_t)&mi_rebind_object < hi)) return 0;   /* (not this library) */
  const ElfW(Sym)* symtab = NULL;
  const char* strtab = NULL;
  const ElfW(Rela)* jmprel = NULL;
  size_t jmprel_size = 0;
  bool rela = false;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; d++) {
    const uintptr_t ptr = (d->d_un.d_ptr < base ? d->d_un.d_ptr + base : d->d_un.d_ptr);   /* relocated or not */
    if (d->d_tag == DT_SYMTAB) symtab = (const ElfW(Sym)*)ptr;
    else if (d->d_tag == DT_STRTAB) strtab = (const char*)ptr;
    else if (d->d_tag == DT_JMPREL) jmprel = (const ElfW(Rela)*)ptr;
    else if (d->d_tag == DT_PLTRELSZ) jmprel_size = (size_t)d->d_un.d_val;
    else if (d->d_tag == DT_PLTREL) rela = (d->d_un.d_val == DT_RELA);
  }
  if (symtab == NULL || strtab == NULL || jmprel == NULL || !rela) return 0;
  for (size_t i = 0; i < jmprel_size / sizeof(ElfW(Rela)); i++) {
    const ElfW(Rela)* const r = &jmprel[i];
    if (ELF64_R_TYPE(r->r_info) != MI_R_JUMP_SLOT) continue;
    const char* const name = strtab + symtab[ELF64_R_SYM(r->r_info)].st_name;
    for (size_t k = 0; k < rb->n; k++) {
      if (strcmp(name, rb->names[k]) != 0) continue;
      void** const slot = (void**)(base + (uintptr_t)r->r_offset);
      const uintptr_t cur = (uintptr_t)__atomic_load_n(slot, __ATOMIC_RELAXED);
      if ((cur == (uintptr_t)rb->from[k] || (cur >= lo && cur < hi)) && mi_rebind_store(slot, rb->to[k], relro_start, relro_end)) {
        rb->count++;
      }
      break;
    }
  }
  return 0;
}

size_t _mi_prim_rebind_calls(const char* const* names, void* const* from, void* const* to, size_t n) {
  mi_rebind_t rb = { names, from, to, n, 0 };
  dl_iterate_phdr(&mi_rebind_object, &rb);
  return rb.count;
}
#endif

bool _mi_prim_env_visit(void (*visit)(const char* entry, void* arg), void* arg) {
  char** env = unix_environ();
  if (env == NULL) return false;
  for (size_t i = 0; env[i] != NULL; i++) visit(env[i], arg);
  return true;
}

bool _mi_prim_env_ready(void) {
  return (unix_environ() != NULL);
}

bool _mi_prim_env_may_have(const char* prefix) {
  char** env = unix_environ();
  if (env == NULL || prefix == NULL) return true;   /* not readable yet: cannot tell */
  const size_t len = strlen(prefix);
  for (size_t i = 0; env[i] != NULL; i++) {
    const char* s = env[i];
    size_t j = 0;
    while (j < len && s[j] != 0 && s[j] != '=' && mi_toupper(s[j]) == mi_toupper(prefix[j])) j++;
    if (j == len) return true;
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
#elif defined(__APPLE__)
  /* getentropy: a system call (no allocation, no file descriptor), at most 256 bytes a call */
  uint8_t* p = (uint8_t*)buf;
  while (buf_len > 0) {
    const size_t n = (buf_len > 256 ? 256 : buf_len);
    if (getentropy(p, n) != 0) return false;
    p += n;
    buf_len -= n;
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

#if defined(__GLIBC__)
/* glibc's pthread_atfork is a wrapper in libc_nonshared.a, linked at the far end of the shared
   library's code: this call at start-up kept a 64 KiB window of it resident in every process
   (CMakeLists.txt, MI_HOT_TEXT). It passes the object's handle to __register_atfork (exported by
   libc since 2.3.2), as we do here. */
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void* dso_handle);
extern void* __dso_handle __attribute__((visibility("hidden")));
bool _mi_prim_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void)) {
  return (__register_atfork(prepare, parent, child, __dso_handle) == 0);
}
#else
bool _mi_prim_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void)) {
  return (pthread_atfork(prepare, parent, child) == 0);
}
#endif

/* ---------------------------------------------------------------------------------------
   The purger's thread: a detached pthread with a small stack, and a wait on a condition
   variable (the monotonic clock where the OS has it for conditions; macOS: a relative wait).
--------------------------------------------------------------------------------------- */
#define MI_UNIX_THREAD_STACK  (64 * MI_KiB)

static pthread_mutex_t unix_wait_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  unix_wait_cond = PTHREAD_COND_INITIALIZER;
static bool            unix_wait_woken;   /* a wake not yet consumed (under the lock) */
static void          (*unix_thread_fun)(void*);
static void*           unix_thread_arg;

static void* unix_thread_main(void* unused) {
  (void)unused;
  unix_thread_fun(unix_thread_arg);
  return NULL;
}

static void unix_wait_init(void) {
  pthread_mutex_init(&unix_wait_lock, NULL);   /* (neither allocates in glibc, musl or macOS) */
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
#if !defined(__APPLE__)
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
#endif
  pthread_cond_init(&unix_wait_cond, &attr);
  pthread_condattr_destroy(&attr);
  unix_wait_woken = false;
}

int _mi_prim_thread_start(void (*fun)(void* arg), void* arg, bool init_wait) {
  const int saved_errno = errno;
  if (init_wait) unix_wait_init();
  unix_thread_fun = fun;
  unix_thread_arg = arg;
  pthread_attr_t attr;
  int err = pthread_attr_init(&attr);
  if (err != 0) { errno = saved_errno; return err; }
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  size_t stack = MI_UNIX_THREAD_STACK;
  if (stack < (size_t)PTHREAD_STACK_MIN) stack = (size_t)PTHREAD_STACK_MIN;
  pthread_attr_setstacksize(&attr, stack);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);   /* the new thread inherits the mask */
  pthread_t thread;
  err = pthread_create(&thread, &attr, &unix_thread_main, NULL);
  if (err == EINVAL) {
    /* glibc puts the static TLS of every loaded object on the thread's stack: a program with
       a large one needs more than the small stack */
    pthread_attr_setstacksize(&attr, 16 * stack);
    err = pthread_create(&thread, &attr, &unix_thread_main, NULL);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  errno = saved_errno;
  return err;
}

void _mi_prim_thread_set_name(const char* name) {
  const int saved_errno = errno;
#if defined(__linux__)
  (void)prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);   /* the calling thread's comm (16 bytes with the NUL) */
#elif defined(__APPLE__)
  (void)pthread_setname_np(name);   /* (macOS names only the calling thread) */
#else
  (void)name;
#endif
  errno = saved_errno;
}

#if defined(__GLIBC__)
extern char __libc_single_threaded __attribute__((weak));   /* glibc 2.32+; false once a thread was created */
bool _mi_prim_process_single_threaded(void) {
  return (&__libc_single_threaded != NULL && __libc_single_threaded != 0);
}
#else
bool _mi_prim_process_single_threaded(void) { return false; }
#endif

void _mi_prim_thread_wait(mi_msecs_t timeout_ms) {
  pthread_mutex_lock(&unix_wait_lock);
  if (!unix_wait_woken) {
    if (timeout_ms < 0) {
      pthread_cond_wait(&unix_wait_cond, &unix_wait_lock);
    }
    else {
      struct timespec t;
#if defined(__APPLE__)
      t.tv_sec = (time_t)(timeout_ms / 1000);
      t.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
      pthread_cond_timedwait_relative_np(&unix_wait_cond, &unix_wait_lock, &t);
#else
      clock_gettime(CLOCK_MONOTONIC, &t);
      t.tv_sec += (time_t)(timeout_ms / 1000);
      t.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
      if (t.tv_nsec >= 1000000000L) { t.tv_sec++; t.tv_nsec -= 1000000000L; }
      pthread_cond_timedwait(&unix_wait_cond, &unix_wait_lock, &t);
#endif
    }
  }
  unix_wait_woken = false;
  pthread_mutex_unlock(&unix_wait_lock);
}

bool _mi_prim_thread_alive(void) { return true; }
bool _mi_prim_process_ending(void) { return false; }

void _mi_prim_thread_wake(void) {
  pthread_mutex_lock(&unix_wait_lock);
  unix_wait_woken = true;
  pthread_cond_signal(&unix_wait_cond);
  pthread_mutex_unlock(&unix_wait_lock);
}
