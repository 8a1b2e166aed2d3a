/* SPDX-License-Identifier: MIT */
/* drift: a 200 MiB live set whose block sizes drift from 64 B up to 64 KiB and back while 4 GiB
 * pass through it (a service whose object sizes change with its load).
 *
 * The live set (`-m`
 * MiB, default 200) is filled, then random live blocks are replaced until `-g` GiB (default 4)
 * have passed through it. Each new block's size is drawn from a window of sizes 4x wide whose
 * bottom slides, evenly in log scale, from 64 B up to 16 KiB (the top reaching 64 KiB) over
 * the first half of the run and back over the second; a replacement frees one random block and
 * allocates until the live bytes are back at the target. Blocks are written whole.
 *
 * Reported (MiB): live_mib, the target; peak_rss_mib, the highest RSS, read every 1,024
 * replacements; final_rss_mib, RSS at the end with the live set still live.
 *
 *   drift [-q] [-m LIVE_MIB] [-g GIB_THROUGH]     -q: 16 MiB live, 256 MiB through */
#include "scenario.h"
#include <math.h>

#define PROG "drift"
#define MIN_LOG2 6.0  /* 64 B */
#define MAX_LOG2 14.0 /* the window's bottom at 16 KiB, its top at 64 KiB */

static unsigned char **g_live;
static size_t g_n, g_cap, g_live_bytes;
static uint64_t g_rng = 0x2545F4914F6CDD1DULL;

/* A size from the window whose bottom is at progress t (0..1 up, 1..2 down) of the drift. */
static size_t draw_size(double t) {
  double tri = t <= 1.0 ? t : 2.0 - t;
  double lo = MIN_LOG2 + (MAX_LOG2 - MIN_LOG2) * tri;
  double u = (double)(bench_rand(&g_rng) >> 11) / 9007199254740992.0; /* [0,1) */
  size_t size = (size_t)exp2(lo + 2.0 * u);
  return size < 16 ? 16 : size;
}

static void add_block(size_t size) {
  if (g_n == g_cap) {
    fprintf(stderr, "%s: more than %zu live blocks\n", PROG, g_cap);
    exit(1);
  }
  unsigned char *p = sc_xmalloc(size, PROG);
  memset(p, (int)(size & 0xFF), size);
  memcpy(p, &size, sizeof size);
  g_live[g_n++] = p;
  g_live_bytes += size;
}

static void remove_block(size_t i) {
  unsigned char *p = g_live[i];
  size_t size;
  memcpy(&size, p, sizeof size);
  if (size < 16 || size > ((size_t)1 << 17) || p[size - 1] != (unsigned char)(size & 0xFF)) {
    fprintf(stderr, "CORRUPT %s: block %p changed\n", PROG, (void *)p);
    exit(1);
  }
  g_live_bytes -= size;
  free(p);
  g_live[i] = g_live[--g_n];
}

int main(int argc, char **argv) {
  size_t live = (size_t)200 << 20;
  double through = 4.0 * 1024 * SC_MIB;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-q") == 0) {
      live = (size_t)16 << 20;
      through = 256 * SC_MIB;
    } else if (strcmp(argv[i], "-m") == 0 && i + 1 < argc) {
      live = (size_t)bench_arg(argv[++i], "live MiB") << 20;
    } else if (strcmp(argv[i], "-g") == 0 && i + 1 < argc) {
      through = (double)bench_arg(argv[++i], "GiB through") * 1024 * SC_MIB;
    } else {
      fprintf(stderr, "usage: %s [-q] [-m LIVE_MIB] [-g GIB_THROUGH]\n", PROG);
      return 2;
    }
  }
  double t0 = bench_now();
  g_cap = live / 16 + 1024;
  g_live = sc_xmalloc(g_cap * sizeof *g_live, PROG);
  while (g_live_bytes < live) add_block(draw_size(0.0));
  double peak = sc_rss_mib(), passed = 0;
  unsigned long long replaced = 0;
  while (passed < through) {
    remove_block(bench_index(bench_rand(&g_rng), g_n));
    double t = 2.0 * passed / through;
    while (g_live_bytes < live) {
      size_t size = draw_size(t);
      add_block(size);
      passed += (double)size;
    }
    if (++replaced % 1024 == 0) {
      double rss = sc_rss_mib();
      if (rss > peak) peak = rss;
    }
  }
  double final_rss = sc_rss_mib();
  if (final_rss > peak) peak = final_rss;
  double elapsed = bench_now() - t0;
  while (g_n > 0) remove_block(g_n - 1);
  free(g_live);
  printf("RESULT prog=%s live_mib=%.1f through_gib=%.2f replaced=%llu peak_rss_mib=%.1f "
         "final_rss_mib=%.1f elapsed_s=%.3f",
         PROG, (double)live / SC_MIB, through / (1024 * SC_MIB), replaced, peak, final_rss,
         elapsed);
  bench_print_origin();
  return 0;
}
