/* SPDX-License-Identifier: MIT */
/* remote-idle: 1M blocks of 1 KiB freed by another thread, then both threads idle (a loader
 * builds a big structure, a worker tears it down, the process waits for work).
 *
 * The main
 * thread allocates 1M blocks of 1 KiB (written whole, pointers kept in an array) and hands them
 * to a second thread, which frees them all and then sleeps `-w` ms (default 1000); the main
 * thread stays alive all along, blocked in pthread_join.
 *
 * Reported (MiB): peak_rss_mib, RSS with every block live; freed_rss_mib, RSS right after the
 * last free; later_rss_mib, RSS `-w` ms after it, both threads still alive; later_pct,
 * later_rss_mib as a percentage of peak_rss_mib (issue 52's target: at most 10).
 *
 *   remote-idle [-q] [-n BLOCKS] [-w MS]     -q: 64K blocks, -w 100 */
#include "scenario.h"

#define PROG "remote-idle"
#define BLOCK 1024

static size_t g_n = (size_t)1 << 20;
static unsigned long g_wait_ms = 1000;
static unsigned char **g_blocks;
static double g_freed_rss, g_later_rss;

static void *freer(void *arg) {
  (void)arg;
  for (size_t i = 0; i < g_n; i++) {
    if (g_blocks[i][0] != (unsigned char)i || g_blocks[i][BLOCK - 1] != (unsigned char)i) {
      fprintf(stderr, "CORRUPT %s: block %zu changed\n", PROG, i);
      exit(1);
    }
    free(g_blocks[i]);
  }
  g_freed_rss = sc_rss_mib();
  sc_sleep_ms(g_wait_ms);
  g_later_rss = sc_rss_mib();
  return NULL;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-q") == 0) {
      g_n = (size_t)1 << 16;
      g_wait_ms = 100;
    } else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
      g_n = (size_t)bench_arg(argv[++i], "blocks");
    } else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc) {
      g_wait_ms = (unsigned long)bench_arg(argv[++i], "wait ms");
    } else {
      fprintf(stderr, "usage: %s [-q] [-n BLOCKS] [-w MS]\n", PROG);
      return 2;
    }
  }
  double t0 = bench_now();
  g_blocks = sc_xmalloc(g_n * sizeof *g_blocks, PROG);
  for (size_t i = 0; i < g_n; i++) {
    g_blocks[i] = sc_xmalloc(BLOCK, PROG);
    memset(g_blocks[i], (int)(unsigned char)i, BLOCK);
  }
  double peak_rss = sc_rss_mib();
  pthread_t th;
  if (pthread_create(&th, NULL, freer, NULL) != 0) {
    fprintf(stderr, "%s: pthread_create failed\n", PROG);
    return 1;
  }
  pthread_join(th, NULL);
  double elapsed = bench_now() - t0;
  free(g_blocks);
  printf("RESULT prog=%s blocks=%zu block_bytes=%d peak_rss_mib=%.1f freed_rss_mib=%.1f "
         "later_rss_mib=%.1f later_pct=%.1f later_ms=%lu elapsed_s=%.3f",
         PROG, g_n, BLOCK, peak_rss, g_freed_rss, g_later_rss,
         peak_rss > 0 ? 100.0 * g_later_rss / peak_rss : -1.0, g_wait_ms, elapsed);
  bench_print_origin();
  return 0;
}
