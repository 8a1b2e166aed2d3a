/* SPDX-License-Identifier: MIT */
/* stats-child.c -- the program run-stats.py starts (JSON and exit-time statistics).

   stats-child json <dir>     workload, then with no allocation in between: mi_stats_get
                              (written to <dir>/get.txt), mi_stats_get_json into a caller
                              buffer (<dir>/buf.json); then mi_stats_get_json(0, NULL)
                              (<dir>/alloc.json, released with mi_free) and with size 0 and a
                              buffer (<dir>/size0.json); checks in C that a too-small caller
                              buffer gives NULL and that nothing is written beyond its size.
   stats-child exit [out|freed]  workload, then writes its final mi_stats_get figures to stdout
                              (key=value lines) and returns; the statistics at exit are what
                              MIMALLOC_SHOW_STATS / MIMALLOC_VERBOSE / MIMALLOC_STATS_JSON
                              produce. With "out": mi_register_output first, so the exit
                              statistics go to stdout as "OUT|<line>". With "freed": every
                              block is freed and mi_collect(true) called before (figures
                              whose current value is 0 while their peak is not).
   stats-child legacy-print   mi_stats_print(NULL), mi_stats_print(stdout), mi_stats_print(stderr)
                              (NULL or the stdout/stderr FILE pointers select the default
                              output: docs/statistics.md), then "done" on stdout.
   stats-child thread-print   a thread that never allocated prints its own statistics
                              (mi_thread_stats_print_out, lines "I|..." on stdout), then a thread
                              that keeps 30 blocks of 100 bytes and frees 10 of 200 ("T|...").

   Files and stdout are written with write(2): stdio would allocate through us and change the
   figures between the snapshots. The first stdout line is "build debug=<0|1> stat=<1|2>". */
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include "stats-common.h"

static ts_build_t build;
static char json_buf[1 << 20];
static char small_buf[4096 + 64];

static void put(int fd, const char* s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

static void write_file(const char* dir, const char* name, const char* text) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK_MSG(fd >= 0, "cannot create %s", path);
  if (fd < 0) return;
  put(fd, text);
  close(fd);
}

/* "name total peak current" / "name total" lines, then the bins */
static char get_text[1 << 16];
static void format_get(const mi_stats_t* s) {
  size_t n = 0;
  const size_t size = sizeof(get_text);
#define MI_STAT_COUNT(name)   n += (size_t)snprintf(get_text + n, size - n, "%s %lld %lld %lld\n", #name, (long long)s->name.total, (long long)s->name.peak, (long long)s->name.current);
#define MI_STAT_COUNTER(name) n += (size_t)snprintf(get_text + n, size - n, "%s %lld\n", #name, (long long)s->name.total);
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  for (size_t i = 0; i <= MI_BIN_HUGE; i++) {
    n += (size_t)snprintf(get_text + n, size - n, "malloc_bins %zu %lld %lld %lld\n", i, (long long)s->malloc_bins[i].total, (long long)s->malloc_bins[i].peak, (long long)s->malloc_bins[i].current);
    n += (size_t)snprintf(get_text + n, size - n, "page_bins %zu %lld %lld %lld\n", i, (long long)s->page_bins[i].total, (long long)s->page_bins[i].peak, (long long)s->page_bins[i].current);
  }
}

/* ---------------------------------------------------------------------------------------
   A workload with a bit of everything: small, medium, large and huge blocks, frees, and a
   thread that ends with live blocks (abandoned): small ones, in a page of a segment the main
   thread uses too, and a huge one, whose segment is then all of an ended thread's.
--------------------------------------------------------------------------------------- */
static void* thread_left[20];
static void* thread_left_huge;
static void* worker(void* arg) {
  (void)arg;
  for (int i = 0; i < 20; i++) thread_left[i] = mi_malloc(48);
  thread_left_huge = mi_malloc(3 * 1024 * 1024);
  void* tmp[50];
  for (int i = 0; i < 50; i++) tmp[i] = mi_malloc(256);
  for (int i = 0; i < 50; i++) mi_free(tmp[i]);
  return NULL;
}

static void* kept[16];
static void* small[1000];
static void workload(void) {
  for (int i = 0; i < 1000; i++) small[i] = mi_malloc(24 + (size_t)(i % 7) * 40);
  for (int i = 0; i < 1000; i += 3) mi_free(small[i]);
  kept[0] = mi_malloc(70 * 1024);
  kept[1] = mi_malloc(700 * 1024);
  kept[2] = mi_malloc(5 * 1024 * 1024);
  void* h = mi_malloc(7 * 1024 * 1024);
  mi_free(h);
  pthread_t t;
  pthread_create(&t, NULL, &worker, NULL);
  pthread_join(t, NULL);
  for (int i = 0; i < 10; i++) mi_free(thread_left[i]);   /* into the abandoned page */
}

static int mode_json(const char* dir) {
  workload();
  mi_stats_merge();
  mi_stats_t_decl(s);
  CHECK(mi_stats_get(&s));
  char* j = mi_stats_get_json(sizeof(json_buf), json_buf);
  CHECK_PTR_EQ(j, json_buf);
  /* the files are written afterwards: nothing allocates between get and the JSON */
  format_get(&s);
  const size_t len = strlen(json_buf);
  CHECK(len > 1000);

  char* a = mi_stats_get_json(0, NULL);
  CHECK(a != NULL);
  if (a != NULL) {
    CHECK_GE(mi_usable_size(a), strlen(a) + 1);
    write_file(dir, "alloc.json", a);
    mi_free(a);
  }
  char* z = mi_stats_get_json(0, small_buf);        /* size 0: allocates, the buffer stays unused */
  CHECK(z != NULL && z != small_buf);
  if (z != NULL && z != small_buf) {
    write_file(dir, "size0.json", z);
    mi_free(z);
  }

  /* too small: NULL, and not a byte beyond the given size is written */
  const size_t sizes[] = { 1, 2, 16, 100, 4096 };
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    memset(small_buf, 0xAB, sizeof(small_buf));
    char* r = mi_stats_get_json(sizes[k], small_buf);
    CHECK_MSG(r == NULL, "mi_stats_get_json(%zu, buf) = %p for a %zu-character document", sizes[k], (void*)r, len);
    bool intact = true;
    for (size_t i = sizes[k]; i < sizeof(small_buf); i++) if ((unsigned char)small_buf[i] != 0xAB) intact = false;
    CHECK_MSG(intact, "mi_stats_get_json(%zu, buf) wrote beyond the buffer", sizes[k]);
  }
  /* half the needed size */
  static char half[1 << 20];
  memset(half, 0xAB, sizeof(half));
  CHECK(mi_stats_get_json(len / 2, half) == NULL);
  bool intact = true;
  for (size_t i = len / 2; i < sizeof(half); i++) if ((unsigned char)half[i] != 0xAB) intact = false;
  CHECK(intact);
  /* comfortably large: the document, NUL-terminated */
  static char big[1 << 20];
  memset(big, 0xAB, sizeof(big));
  CHECK(mi_stats_get_json(len + 4096, big) == big);
  CHECK(memchr(big, 0, len + 4096) != NULL);

  write_file(dir, "get.txt", get_text);
  write_file(dir, "buf.json", json_buf);
  return test_summary("stats-child json", "%s build", build.debug ? "debug" : "release");
}

static void out_fun(const char* msg, void* arg) {
  (void)arg;
  put(1, "OUT|");
  put(1, msg);
}

static int mode_exit(bool registered, bool freed) {
  if (registered) mi_register_output(&out_fun, NULL);
  workload();
  if (freed) {
    for (int i = 0; i < 1000; i++) if (i % 3 != 0) mi_free(small[i]);
    for (int i = 0; i < 3; i++) mi_free(kept[i]);
    for (int i = 10; i < 20; i++) mi_free(thread_left[i]);
    mi_free(thread_left_huge);
    mi_collect(true);
  }
  mi_stats_merge();
  mi_stats_t_decl(s);
  mi_stats_get(&s);
  format_get(&s);
  put(1, get_text);
  return 0;
}

static int mode_legacy(void) {
  void* p = mi_malloc(100);
  mi_stats_print(NULL);
  put(2, "--\n");
  mi_stats_print(stdout);
  put(2, "--\n");
  mi_stats_print(stderr);
  put(1, "done\n");
  mi_free(p);
  return 0;
}

static void prefixed_out(const char* msg, void* arg) {
  put(1, (const char*)arg);
  put(1, msg);
}

static void* idle_thread(void* arg) {
  mi_thread_stats_print_out(&prefixed_out, arg);
  return NULL;
}

static void* busy_thread(void* arg) {
  static void* keep[30];
  void* tmp[10];
  for (int i = 0; i < 30; i++) keep[i] = mi_malloc(100);
  for (int i = 0; i < 10; i++) tmp[i] = mi_malloc(200);
  for (int i = 0; i < 10; i++) mi_free(tmp[i]);
  mi_thread_stats_print_out(&prefixed_out, arg);
  for (int i = 0; i < 30; i++) mi_free(keep[i]);
  return NULL;
}

static int mode_thread_print(void) {
  pthread_t t;
  pthread_create(&t, NULL, &idle_thread, (void*)"I|");
  pthread_join(t, NULL);
  pthread_create(&t, NULL, &busy_thread, (void*)"T|");
  pthread_join(t, NULL);
  put(1, "done\n");
  return 0;
}

int main(int argc, char** argv) {
  build = ts_detect_build();
  char line[64];
  snprintf(line, sizeof(line), "build debug=%d stat=%d\n", build.debug ? 1 : 0, build.stat_level);
  const char* mode = (argc > 1 ? argv[1] : "");
  if (strcmp(mode, "json") == 0 && argc > 2) { put(1, line); return mode_json(argv[2]); }
  if (strcmp(mode, "exit") == 0) {
    put(1, line);
    return mode_exit(argc > 2 && strcmp(argv[2], "out") == 0, argc > 2 && strcmp(argv[2], "freed") == 0);
  }
  if (strcmp(mode, "legacy-print") == 0) { put(1, line); return mode_legacy(); }
  if (strcmp(mode, "thread-print") == 0) { put(1, line); return mode_thread_print(); }
  put(2, "usage: stats-child json <dir> | exit [out|freed] | legacy-print | thread-print\n");
  return 2;
}
