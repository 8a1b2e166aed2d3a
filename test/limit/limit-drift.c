/* SPDX-License-Identifier: MIT */
/* limit-drift.c -- the workload of issue 53: a live set of fixed size whose block sizes drift
   while many times that passes through it. Each step frees a random live block and allocates
   one of the current size range, which moves from 1 KiB up to 1 MiB and back (log scale) over
   the run, so freed memory of the old sizes does not serve the new ones: it must be purged or
   it adds to the committed memory. Every block is touched (one write per 4 KiB).
   usage: limit-drift LIVE_MIB TOTAL_MIB
   prints: "peak_commit <bytes> peak_rss <bytes> elapsed_ms <ms>" */
#include <mimalloc.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next(void) {   /* splitmix64: the same sequence under every setting */
  uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

#define SLOTS  (1 << 16)
static void* slot[SLOTS];
static size_t slot_size[SLOTS];

int main(int argc, char** argv) {
  if (argc != 3) { fprintf(stderr, "usage: limit-drift LIVE_MIB TOTAL_MIB\n"); return 2; }
  const size_t live_max = (size_t)atol(argv[1]) << 20;
  const size_t total = (size_t)atol(argv[2]) << 20;
  size_t live = 0, passed = 0, n = 0;
  while (passed < total) {
    /* the size range: 2^(10 + 10*phase) .. twice that, phase 0 -> 1 -> 0 over the run */
    const double t = (double)passed / (double)total;
    const double phase = (t < 0.5 ? 2 * t : 2 - 2 * t);
    const size_t lo = (size_t)1 << (10 + (int)(phase * 10));
    const size_t size = lo + (size_t)(next() % lo);
    while (n > 0 && (live + size > live_max || n == SLOTS)) {   /* make room: free random blocks */
      const size_t k = (size_t)(next() % n);
      live -= slot_size[k];
      mi_free(slot[k]);
      slot[k] = slot[n - 1]; slot_size[k] = slot_size[n - 1];
      n--;
    }
    char* p = (char*)mi_malloc(size);
    if (p == NULL) { fprintf(stderr, "out of memory\n"); return 1; }
    for (size_t i = 0; i < size; i += 4096) p[i] = (char)i;
    slot[n] = p; slot_size[n] = size; n++;
    live += size;
    passed += size;
  }
  size_t elapsed = 0, peak_rss = 0, peak_commit = 0;
  mi_process_info(&elapsed, NULL, NULL, NULL, &peak_rss, NULL, &peak_commit, NULL);
  printf("peak_commit %zu peak_rss %zu elapsed_ms %zu\n", peak_commit, peak_rss, elapsed);
  return 0;
}
