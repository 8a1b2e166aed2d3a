/* SPDX-License-Identifier: MIT */
/* spawn: process start-up cost: many short-lived processes started one after another.
 *
 * Pattern modelled: exec-heavy work (shell scripts, make, git hooks, configure scripts, test
 * runners), where most processes live for about a millisecond and the allocator's part of it
 * (loading the preloaded library, its initialisation, the first allocations, exit) is a large
 * share of the cost. Written for this project's suite; it models no published program.
 *
 * Two phases, each of N processes started with posix_spawn (vfork-like, so the parent's size
 * does not matter) and waited for one at a time:
 *   true   /bin/true: loading and initialisation only (it allocates nothing under glibc);
 *   small  this program again with -c: a small tool's allocations (a few hundred blocks of
 *          16..512 B, a 4 KiB stdio-like buffer, a table grown by realloc to 64 KiB, a 256 KiB
 *          buffer), all checked and freed.
 * The children inherit the environment, so an allocator preloaded into this program is
 * preloaded into every child too. Under the suite (BENCH_ORIGIN_FILE set), the first child of
 * each phase also keeps the suite's origin.so, so that the report shows the children ran with
 * the allocator; the others run without origin.so (and without BENCH_ORIGIN_FILE), so that
 * only the allocator's start-up is measured, not the check's.
 *
 * Reported: the median wall time per process of each phase (true_us, small_us, in
 * microseconds, from just before posix_spawn to the end of waitpid), the minor page faults
 * per process (true_faults, small_faults: the children's getrusage total over the phase,
 * divided by N; a steadier figure than time on a busy machine) and the total time.
 *
 * usage: spawn [-n N] [-q]        defaults: -n 1000 per phase; -q: -n 100
 *        spawn -c                 (the child of the small phase)
 */
#include "workload.h"

#include <errno.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_ENV 4096

static void usage(void) {
  fprintf(stderr, "usage: spawn [-n PROCESSES_PER_PHASE] [-q] | spawn -c\n");
  exit(2);
}

/* The child of the small phase: what a small command-line tool allocates. */
static int child(void) {
  enum { SMALL = 300 };
  unsigned char *blk[SMALL];
  size_t sz[SMALL];
  uint64_t s = 42;
  for (size_t i = 0; i < SMALL; i++) {
    sz[i] = 16 + bench_index(bench_rand(&s), 497);
    blk[i] = BENCH_MALLOC(sz[i]);
    if (blk[i] == NULL) return 3;
    wl_stamp(blk[i], sz[i], i);
  }
  unsigned char *buf = BENCH_MALLOC(4096);
  unsigned char *big = BENCH_MALLOC(256 * 1024);
  if (buf == NULL || big == NULL) return 3;
  memset(buf, 1, 4096);
  for (size_t off = 0; off < 256 * 1024; off += 4096) big[off] = 2;
  size_t cap = 64;
  uint64_t *table = BENCH_MALLOC(cap * sizeof *table);
  if (table == NULL) return 3;
  for (size_t i = 0; i < 8192; i++) {
    if (i == cap) {
      cap *= 2;
      uint64_t *t = realloc(table, cap * sizeof *table);
      if (t == NULL) return 3;
      table = t;
    }
    table[i] = i * 3;
  }
  for (size_t i = 0; i < 8192; i++) {
    if (table[i] != i * 3) return 4;
  }
  for (size_t i = 0; i < SMALL; i++) {
    if (!wl_stamp_ok(blk[i], sz[i], i)) return 4;
    BENCH_FREE(blk[i]);
  }
  BENCH_FREE(table);
  BENCH_FREE(big);
  BENCH_FREE(buf);
  return 0;
}

static bool is_origin_so(const char *path, size_t len) {
  static const char name[] = "origin.so";
  const size_t n = sizeof name - 1;
  return len >= n && memcmp(path + len - n, name, n) == 0 && (len == n || path[len - n - 1] == '/');
}

/* env without BENCH_ORIGIN_FILE and with LD_PRELOAD less any origin.so */
static char **lean_environment(void) {
  static char *env[MAX_ENV];
  static char preload[8192];
  size_t k = 0;
  for (size_t i = 0; environ[i] != NULL && k < MAX_ENV - 1; i++) {
    const char *e = environ[i];
    if (strncmp(e, "BENCH_ORIGIN_FILE=", 18) == 0) continue;
    if (strncmp(e, "LD_PRELOAD=", 11) == 0) {
      size_t pos = (size_t)snprintf(preload, sizeof preload, "LD_PRELOAD=");
      const char *p = e + 11;
      while (*p != 0) {
        while (*p == ' ' || *p == ':') p++;
        size_t len = strcspn(p, " :");
        if (len > 0 && !is_origin_so(p, len) && pos + len + 2 < sizeof preload) {
          if (preload[pos - 1] != '=') preload[pos++] = ' ';
          memcpy(preload + pos, p, len);
          pos += len;
        }
        p += len;
      }
      preload[pos] = 0;
      env[k++] = preload;
      continue;
    }
    env[k++] = (char *)e;
  }
  env[k] = NULL;
  return env;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static long children_minflt(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_CHILDREN, &ru) != 0) return 0;
  return ru.ru_minflt;
}

/* N runs of argv, one at a time; returns the median seconds per process and sets *faults to
   the minor page faults per process. */
static double phase(const char *what, char *const argv[], size_t n, bool origin, double *faults) {
  const long flt0 = children_minflt();
  double *t = malloc(n * sizeof *t);
  if (t == NULL) exit(1);
  char **lean = lean_environment();
  for (size_t i = 0; i < n; i++) {
    char **env = (i == 0 && origin ? environ : lean);
    const double t0 = bench_now();
    pid_t pid;
    int err = posix_spawn(&pid, argv[0], NULL, NULL, argv, env);
    if (err != 0) {
      fprintf(stderr, "spawn: posix_spawn %s: %s\n", argv[0], strerror(err));
      exit(1);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
      if (errno != EINTR) {
        perror("spawn: waitpid");
        exit(1);
      }
    }
    t[i] = bench_now() - t0;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "CORRUPT spawn: %s child %zu ended with status 0x%x\n", what, i, st);
      exit(1);
    }
  }
  *faults = (double)(children_minflt() - flt0) / (double)n;
  qsort(t, n, sizeof *t, cmp_double);
  const double median = (n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2);
  free(t);
  return median;
}

int main(int argc, char **argv) {
  size_t n = 1000;
  bool quick = false, set_n = false;
  int opt;
  while ((opt = getopt(argc, argv, "n:qc")) != -1) {
    switch (opt) {
      case 'n': n = (size_t)bench_arg(optarg, "-n"); set_n = true; break;
      case 'q': quick = true; break;
      case 'c': return child();
      default: usage();
    }
  }
  if (optind != argc) usage();
  if (quick && !set_n) n = 100;

  static char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    perror("spawn: readlink /proc/self/exe");
    return 1;
  }
  self[len] = 0;
  const bool origin = (getenv("BENCH_ORIGIN_FILE") != NULL);
  char *true_argv[] = {"/bin/true", NULL};
  char *small_argv[] = {self, "-c", NULL};

  const double t0 = bench_now();
  double true_faults, small_faults;
  const double true_s = phase("true", true_argv, n, origin, &true_faults);
  const double small_s = phase("small", small_argv, n, origin, &small_faults);
  const double secs = bench_now() - t0;

  printf("RESULT workload=spawn processes=%zu elapsed_s=%.6f true_us=%.1f small_us=%.1f "
         "true_faults=%.1f small_faults=%.1f",
         2 * n, secs, true_s * 1e6, small_s * 1e6, true_faults, small_faults);
  bench_print_origin();
  return 0;
}
